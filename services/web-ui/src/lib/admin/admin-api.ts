// The admin pages' calls (Open WebUI 0.10.2's admin API on the chat face). Types come type-only
// from @gatehouse/contracts, as everywhere in the web UI.
import type { z } from 'zod';
import type {
  AdminConfig as AdminConfigSchema,
  OllamaConnectionsConfig as OllamaConfigSchema,
  OpenAIConnectionsConfig as OpenAIConfigSchema,
  UserList as UserListSchema,
} from '@gatehouse/contracts';
import { api } from '../api.ts';

export type AdminUser = z.infer<typeof UserListSchema>['users'][number];
export type UserList = z.infer<typeof UserListSchema>;
export type AdminConfig = z.infer<typeof AdminConfigSchema>;
export type OpenAIConfig = z.infer<typeof OpenAIConfigSchema>;
export type OllamaConfig = z.infer<typeof OllamaConfigSchema>;
export type Role = AdminUser['role'];

export const ROLES: readonly Role[] = ['pending', 'user', 'admin'];
/** Open WebUI's page size for `GET /api/v1/users/`. */
export const USERS_PAGE_SIZE = 30;
/** Open WebUI's admin form rule for JWT_EXPIRES_IN (-1: never expires). */
export const JWT_EXPIRES_IN_PATTERN = /^(-1|0|(-?\d+(\.\d+)?)(ms|s|m|h|d|w))$/;

export const listUsers = (page: number, query: string): Promise<UserList> =>
  api.get<UserList>('/api/v1/users/', { query: { page, query: query.trim() || undefined } });

/** `POST /api/v1/users/{id}/update` needs the whole form: the user's own name, email and picture go back as they are. */
export const setRole = (u: AdminUser, role: Role): Promise<AdminUser> =>
  api.post<AdminUser>(`/api/v1/users/${encodeURIComponent(u.id)}/update`, {
    role,
    name: u.name,
    email: u.email,
    profile_image_url: u.profile_image_url,
  });

export const deleteUser = (id: string): Promise<boolean> => api.del<boolean>(`/api/v1/users/${encodeURIComponent(id)}`);

export const getAdminConfig = (): Promise<AdminConfig> => api.get<AdminConfig>('/api/v1/auths/admin/config');
/** The whole config goes back (Open WebUI's form replaces every key it names). */
export const saveAdminConfig = (config: AdminConfig): Promise<AdminConfig> => api.post<AdminConfig>('/api/v1/auths/admin/config', config);

export const getOpenAIConfig = (): Promise<OpenAIConfig> => api.get<OpenAIConfig>('/openai/config');
export const getOllamaConfig = (): Promise<OllamaConfig> => api.get<OllamaConfig>('/ollama/config');

/** Epoch seconds as a local date and time; '—' for never. */
export function when(epoch: unknown): string {
  return typeof epoch === 'number' && epoch > 0 ? new Date(epoch * 1000).toLocaleString() : '—';
}
