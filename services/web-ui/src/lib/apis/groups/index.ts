// /api/v1/groups: the groups I can see (whom a folder can be shared with); the admin's Groups tab
// (create, rename, permissions, members, delete).
import { api, type Body, type Reply } from '../client.ts';

export type Group = Reply<'groups.list'>[number];
export type GroupMember = Reply<'groups.users'>[number];

const one = (id: string) => `/api/v1/groups/id/${encodeURIComponent(id)}`;

export const listGroups = (): Promise<Group[]> => api.get<Group[]>('/api/v1/groups/');
export const createGroup = (form: Body<'groups.create'>): Promise<Group> => api.post<Group>('/api/v1/groups/create', form);
export const getGroup = (id: string): Promise<Group> => api.get<Group>(one(id));
export const updateGroup = (id: string, form: Body<'groups.update'>): Promise<Group> => api.post<Group>(`${one(id)}/update`, form);
export const groupMembers = (id: string): Promise<GroupMember[]> => api.post<GroupMember[]>(`${one(id)}/users`);
export const addGroupMembers = (id: string, userIds: string[]): Promise<Group> =>
  api.post<Group>(`${one(id)}/users/add`, { user_ids: userIds } satisfies Body<'groups.addUsers'>);
export const removeGroupMembers = (id: string, userIds: string[]): Promise<Group> =>
  api.post<Group>(`${one(id)}/users/remove`, { user_ids: userIds } satisfies Body<'groups.removeUsers'>);
export const deleteGroup = (id: string): Promise<Reply<'groups.delete'>> => api.del<Reply<'groups.delete'>>(`${one(id)}/delete`);
