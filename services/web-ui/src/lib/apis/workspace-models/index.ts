// /api/v1/models: workspace models (Workspace → Models), custom models that are a preset over a
// base model, as Open WebUI 0.10.2's own front end calls them: the id travels in the body or the
// query (`?id=`), never the path, since model ids may hold `/`.
import { api, type Body, type Reply } from '../client.ts';

export type WorkspaceModel = Reply<'workspaceModels.create'>;
export type WorkspaceModelWithAccess = Reply<'workspaceModels.get'>;
export type WorkspaceModelPage = Reply<'workspaceModels.listPage'>;
export type WorkspaceModelForm = Body<'workspaceModels.create'>;

const M = '/api/v1/models';
// Open WebUI answers 401 for a taken id, a model I may not see or change, and a missing
// permission: those are the form's errors to show, not a lost session (the list still redirects).
const own = { noAuthRedirect: true };
const byId = (path: string, id: string) => `${M}${path}?id=${encodeURIComponent(id)}`;

/** The workspace page: search, then one page of 30 with the owner and whether I may change each. */
export function listWorkspaceModels(opts: { query?: string; viewOption?: 'created' | 'shared'; page?: number } = {}): Promise<WorkspaceModelPage> {
  const q = new URLSearchParams();
  if (opts.query) q.set('query', opts.query);
  if (opts.viewOption) q.set('view_option', opts.viewOption);
  if (opts.page) q.set('page', String(opts.page));
  const s = q.toString();
  return api.get<WorkspaceModelPage>(`${M}/list${s ? `?${s}` : ''}`);
}
export const getWorkspaceModel = (id: string): Promise<WorkspaceModelWithAccess> => api.get<WorkspaceModelWithAccess>(byId('/model', id), own);
export const createWorkspaceModel = (form: WorkspaceModelForm): Promise<WorkspaceModel> => api.post<WorkspaceModel>(`${M}/create`, form, own);
export const updateWorkspaceModel = (form: Body<'workspaceModels.update'>): Promise<WorkspaceModel> => api.post<WorkspaceModel>(`${M}/model/update`, form, own);
export const toggleWorkspaceModel = (id: string): Promise<WorkspaceModel> => api.post<WorkspaceModel>(byId('/model/toggle', id), {}, own);
export const deleteWorkspaceModel = (id: string): Promise<Reply<'workspaceModels.delete'>> => api.post<Reply<'workspaceModels.delete'>>(`${M}/model/delete`, { id }, own);
export const exportWorkspaceModels = (): Promise<Reply<'workspaceModels.export'>> => api.get<Reply<'workspaceModels.export'>>(`${M}/export`, own);
export const importWorkspaceModels = (models: Record<string, unknown>[]): Promise<Reply<'workspaceModels.import'>> => api.post<Reply<'workspaceModels.import'>>(`${M}/import`, { models }, own);
