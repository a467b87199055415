// /api/v1/users: the admin's user list, role changes and deletions; everyone (for sharing).
import { api, type Body, type Reply } from '../client.ts';

export type UserList = Reply<'users.list'>;
export type AdminUser = UserList['users'][number];
export type Role = AdminUser['role'];
export type UserInfo = Reply<'users.all'>['users'][number];

export const ROLES: readonly Role[] = ['pending', 'user', 'admin'];
/** Open WebUI's page size for `GET /api/v1/users/`. */
export const USERS_PAGE_SIZE = 30;

export const listUsers = (page: number, query: string): Promise<UserList> =>
  api.get<UserList>('/api/v1/users/', { query: { page, query: query.trim() || undefined } });

/** Every user (id, name, email, role): whom a folder can be shared with. */
export const listAllUsers = (): Promise<Reply<'users.all'>> => api.get<Reply<'users.all'>>('/api/v1/users/all');

/** `POST /api/v1/users/{id}/update` needs the whole form: the user's own name, email and picture go back as they are. */
export const setRole = (u: AdminUser, role: Role): Promise<AdminUser> =>
  api.post<AdminUser>(`/api/v1/users/${encodeURIComponent(u.id)}/update`, {
    role,
    name: u.name,
    email: u.email,
    profile_image_url: u.profile_image_url,
  } satisfies Body<'users.update'>);

export const deleteUser = (id: string): Promise<Reply<'users.delete'>> => api.del<Reply<'users.delete'>>(`/api/v1/users/${encodeURIComponent(id)}`);
