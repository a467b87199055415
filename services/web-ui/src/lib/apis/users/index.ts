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

/** `POST /api/v1/users/{id}/update` with every field the admin's edit form has (an empty password keeps the old one). */
export const updateUser = (id: string, form: Body<'users.update'>): Promise<AdminUser> =>
  api.post<AdminUser>(`/api/v1/users/${encodeURIComponent(id)}/update`, form);

// ---- my own settings and info (Open WebUI keeps the UI's settings under `ui`) ----

/** What Settings saves: Open WebUI's `settings.ui` object (theme, system prompt, params, audio, …); any key. */
export type UiSettings = Record<string, unknown>;
export interface UserSettings {
  ui?: UiSettings;
  [key: string]: unknown;
}

/** `GET /api/v1/users/user/settings`: null until something was saved. */
export const getUserSettings = (): Promise<UserSettings | null> => api.get<UserSettings | null>('/api/v1/users/user/settings');
/** `POST /api/v1/users/user/settings/update`: replaces the stored settings with this object. */
export const updateUserSettings = (settings: UserSettings): Promise<UserSettings> => api.post<UserSettings>('/api/v1/users/user/settings/update', settings);
export const getUserInfo = (): Promise<Record<string, unknown> | null> => api.get<Record<string, unknown> | null>('/api/v1/users/user/info');
export const updateUserInfo = (info: Record<string, unknown>): Promise<Record<string, unknown>> => api.post<Record<string, unknown>>('/api/v1/users/user/info/update', info);
