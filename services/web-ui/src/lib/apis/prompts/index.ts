// /api/v1/prompts: workspace prompts (Workspace → Prompts, and `/` in the chat input), as Open
// WebUI 0.10.2's own front end calls them. Commands travel without their leading `/`.
import { api, type Body, type Reply } from '../client.ts';

export type Prompt = Reply<'prompts.list'>[number];
export type PromptWithAccess = Reply<'prompts.get'>;
export type PromptPage = Reply<'prompts.listPage'>;
export type PromptForm = Body<'prompts.create'>;

const one = (id: string) => `/api/v1/prompts/id/${encodeURIComponent(id)}`;

/** Every prompt I may read (the `/` menu). */
export const listPrompts = (): Promise<Prompt[]> => api.get<Prompt[]>('/api/v1/prompts/');
/** The workspace page: search, then one page of 30 with the owner and whether I may change each. */
export function listPromptPage(opts: { query?: string; viewOption?: 'created' | 'shared'; tag?: string; page?: number } = {}): Promise<PromptPage> {
  const q = new URLSearchParams();
  if (opts.query) q.set('query', opts.query);
  if (opts.viewOption) q.set('view_option', opts.viewOption);
  if (opts.tag) q.set('tag', opts.tag);
  if (opts.page) q.set('page', String(opts.page));
  const s = q.toString();
  return api.get<PromptPage>(`/api/v1/prompts/list${s ? `?${s}` : ''}`);
}
export const getPrompt = (id: string): Promise<PromptWithAccess> => api.get<PromptWithAccess>(one(id));
export const getPromptByCommand = (command: string): Promise<PromptWithAccess> =>
  api.get<PromptWithAccess>(`/api/v1/prompts/command/${encodeURIComponent(command.replace(/^\//, ''))}`);
export const createPrompt = (form: PromptForm): Promise<Prompt> => api.post<Prompt>('/api/v1/prompts/create', { ...form, command: form.command.replace(/^\//, '') });
export const updatePrompt = (id: string, form: Body<'prompts.update'>): Promise<Prompt> =>
  api.post<Prompt>(`${one(id)}/update`, { ...form, command: form.command.replace(/^\//, '') });
export const updatePromptAccess = (id: string, form: Body<'prompts.updateAccess'>): Promise<Prompt> => api.post<Prompt>(`${one(id)}/access/update`, form);
export const deletePrompt = (id: string): Promise<Reply<'prompts.delete'>> => api.del<Reply<'prompts.delete'>>(`${one(id)}/delete`);
