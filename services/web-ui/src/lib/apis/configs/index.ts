// The platform's public config (`/api/config`), its change log and the admin's read-only view of
// the model connections (`/openai/config`, `/ollama/config`).
import type { Changelog } from '../../changelog.ts';
import { api, type Reply } from '../client.ts';

export type AppConfig = Reply<'config.get'>;
export type OpenAIConfig = Reply<'connections.openai.config'>;
export type OllamaConfig = Reply<'connections.ollama.config'>;

const quiet = { noAuthRedirect: true } as const;

export const getAppConfig = (): Promise<AppConfig> => api.get<AppConfig>('/api/config', quiet);
/** Open WebUI's release notes, keyed by version (not a catalog operation: the edge answers it). */
export const getChangelog = (): Promise<Changelog> => api.get<Changelog>('/api/changelog', quiet);
export const getOpenAIConfig = (): Promise<OpenAIConfig> => api.get<OpenAIConfig>('/openai/config');
export const getOllamaConfig = (): Promise<OllamaConfig> => api.get<OllamaConfig>('/ollama/config');
