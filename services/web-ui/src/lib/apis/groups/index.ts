// /api/v1/groups: the groups I can see (whom a folder can be shared with).
import { api, type Reply } from '../client.ts';

export type Group = Reply<'groups.list'>[number];

export const listGroups = (): Promise<Group[]> => api.get<Group[]>('/api/v1/groups/');
