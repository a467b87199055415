// /api/models: the models the chat can use (arena models included).
import { api, type Reply } from '../client.ts';

export type Model = Reply<'models.list'>['data'][number];

export const listModels = (): Promise<Reply<'models.list'>> => api.get<Reply<'models.list'>>('/api/models');
