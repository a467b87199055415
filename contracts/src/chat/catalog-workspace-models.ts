import { z } from 'zod';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';
import { AccessGrantForm } from './forms.ts';
import { AccessGrant } from './replies.ts';

/**
 * Workspace models (Open WebUI 0.10.2 routers/models.py, models/models.py): a custom model is a
 * preset over a base model — its own id, name, meta (profile image, description, capabilities,
 * attached knowledge, tool ids…) and params (system prompt, temperature…). `/api/models` lists
 * the active ones a caller may read beside the base models (with the row as `info`), and a
 * completion naming one is sent upstream as its base model with the preset applied under the
 * request's own params. Who sees one: its owner, admins, and whoever its grants reach (a user, a
 * group, or `user:*`); creating needs `workspace.models` (or `models_import` for /import) unless
 * the caller is an admin. The id is in the body or the query (`?id=`), never the path, as in
 * Open WebUI (model ids may hold `/`).
 */

const json = z.record(z.string(), z.unknown());
const epoch = z.number().int();

/** ModelMeta: Open WebUI keeps unknown keys (its `extra = "allow"`). */
export const WorkspaceModelMeta = z
  .object({
    profile_image_url: z.string().nullish(),
    description: z.string().nullish(),
    capabilities: json.nullish(),
    /** Knowledge bases and files attached: `{type: "collection"|"file", id, …}` items. */
    knowledge: z.array(json).nullish(),
    toolIds: z.array(z.string()).nullish(),
    tags: z.array(z.unknown()).nullish(),
  })
  .passthrough();

/** ModelForm: create, update and each model of an import. */
export const WorkspaceModelForm = z.object({
  id: z.string(),
  base_model_id: z.string().nullish(),
  name: z.string(),
  meta: WorkspaceModelMeta,
  params: json,
  access_grants: z.array(AccessGrantForm).nullish(),
  is_active: z.boolean().nullish(),
});
export type WorkspaceModelForm = z.output<typeof WorkspaceModelForm>;

export const WorkspaceModelIdForm = z.object({ id: z.string() });
export const WorkspaceModelAccessForm = z.object({ id: z.string(), access_grants: z.array(AccessGrantForm) });
export const WorkspaceModelsImportForm = z.object({ models: z.array(json) });

/** ModelModel, field for field, with its grants. */
export const WorkspaceModel = z.object({
  id: z.string(),
  user_id: z.string(),
  base_model_id: z.string().nullable(),
  name: z.string(),
  params: json,
  meta: json,
  is_active: z.boolean(),
  created_at: epoch,
  updated_at: epoch,
  access_grants: z.array(AccessGrant),
});
export type WorkspaceModel = z.infer<typeof WorkspaceModel>;

export const WorkspaceModelOwner = z.object({ id: z.string(), name: z.string(), email: z.string(), role: z.string(), profile_image_url: z.string() });
/** ModelAccessResponse: the model, its owner and whether the caller may change it. */
export const WorkspaceModelAccess = WorkspaceModel.extend({ user: WorkspaceModelOwner.nullable(), write_access: z.boolean() });
export type WorkspaceModelAccess = z.infer<typeof WorkspaceModelAccess>;
export const WorkspaceModelList = z.object({ items: z.array(WorkspaceModelAccess), total: z.number().int() });

export const WORKSPACE_MODELS_OPS = catalog({
  /**
   * The workspace's list (`GET /api/v1/models/` is not here: the edge answers a path with and
   * without its trailing slash, and `/api/v1/models` is Open WebUI's alias of `/api/models`). Every
   * custom model the caller may read, inactive ones too; `query` (name, id, owner), `view_option` (`created`/`shared`), `tag`, `order_by` (`name`, `created_at`, `updated_at`), `direction`, `page` (30 a page). */
  'workspaceModels.listPage': { subject: 'chat.workspaceModels.listPage', routes: [GET('/api/v1/models/list')], reply: WorkspaceModelList, auth: 'verified', events: [] },
  /** Rows that override a base model (no base_model_id). */
  'workspaceModels.base': { subject: 'chat.workspaceModels.base', routes: [GET('/api/v1/models/base')], reply: z.array(WorkspaceModel), auth: 'admin', events: [] },
  /** The tags of the models the caller may read, sorted. */
  'workspaceModels.tags': { subject: 'chat.workspaceModels.tags', routes: [GET('/api/v1/models/tags')], reply: z.array(z.string()), auth: 'verified', events: [] },
  'workspaceModels.create': {
    subject: 'chat.workspaceModels.create',
    routes: [POST('/api/v1/models/create')],
    body: WorkspaceModelForm,
    reply: WorkspaceModel,
    auth: 'verified',
    events: ['model.created'],
  },
  /** `?id=`: the model, or 404 to whoever may not read it. */
  'workspaceModels.get': { subject: 'chat.workspaceModels.get', routes: [GET('/api/v1/models/model')], reply: WorkspaceModelAccess, auth: 'verified', events: [] },
  'workspaceModels.update': {
    subject: 'chat.workspaceModels.update',
    routes: [POST('/api/v1/models/model/update')],
    body: WorkspaceModelForm,
    reply: WorkspaceModel,
    auth: 'verified',
    events: ['model.updated'],
  },
  /** `?id=`: active ↔ inactive; an inactive model is left out of /api/models and refused by completions. */
  'workspaceModels.toggle': { subject: 'chat.workspaceModels.toggle', routes: [POST('/api/v1/models/model/toggle')], reply: WorkspaceModel, auth: 'verified', events: ['model.updated'] },
  'workspaceModels.updateAccess': {
    subject: 'chat.workspaceModels.updateAccess',
    routes: [POST('/api/v1/models/model/access/update')],
    body: WorkspaceModelAccessForm,
    reply: WorkspaceModel,
    auth: 'verified',
    events: ['model.updated'],
  },
  /** Open WebUI 0.10's front end POSTs `{id}`; DELETE with the same body is answered too. */
  'workspaceModels.delete': {
    subject: 'chat.workspaceModels.delete',
    routes: [POST('/api/v1/models/model/delete'), DELETE('/api/v1/models/model/delete')],
    body: WorkspaceModelIdForm,
    reply: z.boolean(),
    auth: 'verified',
    events: ['model.deleted'],
  },
  /** Every model the caller may read, as stored (admins, or `workspace.models_export`). */
  'workspaceModels.export': { subject: 'chat.workspaceModels.export', routes: [GET('/api/v1/models/export')], reply: z.array(WorkspaceModel), auth: 'verified', events: [] },
  /** `{models: [ModelForm…]}`: new ids are created as the caller's, existing ones the caller may write are updated. */
  'workspaceModels.import': {
    subject: 'chat.workspaceModels.import',
    routes: [POST('/api/v1/models/import')],
    body: WorkspaceModelsImportForm,
    reply: z.boolean(),
    auth: 'verified',
    events: ['model.created', 'model.updated'],
  },
});
