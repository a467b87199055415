// The platform's public config (`/api/config`), its change log and the admin's model connections
// (`/openai/config`, `/ollama/config` and their `/update`).
import type { Changelog } from '../../changelog.ts';
import { api, type Body, type Reply } from '../client.ts';

export type AppConfig = Reply<'config.get'>;
export type OpenAIConfig = Reply<'connections.openai.config'>;
export type OllamaConfig = Reply<'connections.ollama.config'>;

const quiet = { noAuthRedirect: true } as const;

export const getAppConfig = (): Promise<AppConfig> => api.get<AppConfig>('/api/config', quiet);
/** Open WebUI's release notes, keyed by version (not a catalog operation: the edge answers it). */
export const getChangelog = (): Promise<Changelog> => api.get<Changelog>('/api/changelog', quiet);
export const getOpenAIConfig = (): Promise<OpenAIConfig> => api.get<OpenAIConfig>('/openai/config');
export const getOllamaConfig = (): Promise<OllamaConfig> => api.get<OllamaConfig>('/ollama/config');
/** Replaces the OpenAI connections; a key sent as "" keeps the one stored for the same URL. */
export const updateOpenAIConfig = (form: Body<'connections.openai.update'>): Promise<OpenAIConfig> => api.post<OpenAIConfig>('/openai/config/update', form);
export const updateOllamaConfig = (form: Body<'connections.ollama.update'>): Promise<OllamaConfig> => api.post<OllamaConfig>('/ollama/config/update', form);
/**
 * Verify, after a save: the model list read afresh from every connection (`?refresh=true`);
 * each model says which connection it came from (`owned_by`, `urlIdx`).
 */
export const refreshedModels = (): Promise<Reply<'models.list'>> => api.get<Reply<'models.list'>>('/api/models', { query: { refresh: true } });
