// /api/v1/memories: what the models remember about me (Settings → Personalization).
import { api, type Body, type Reply } from '../client.ts';

export type Memory = Reply<'memories.list'>[number];
export type MemoryForm = Body<'memories.add'>;

const one = (id: string) => `/api/v1/memories/${encodeURIComponent(id)}`;

export const listMemories = (): Promise<Memory[]> => api.get<Memory[]>('/api/v1/memories/');
export const addMemory = (form: MemoryForm): Promise<Memory> => api.post<Memory>('/api/v1/memories/add', form);
export const updateMemory = (id: string, form: Body<'memories.update'>): Promise<Memory> => api.post<Memory>(`${one(id)}/update`, form);
export const deleteMemory = (id: string): Promise<Reply<'memories.delete'>> => api.del<Reply<'memories.delete'>>(one(id));
