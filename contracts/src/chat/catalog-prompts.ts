import { z } from 'zod';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';
import { AccessGrantForm } from './forms.ts';
import { AccessGrant } from './replies.ts';

/**
 * Workspace prompts (Open WebUI 0.10.2 routers/prompts.py, models/prompts.py, prompt_history.py):
 * a text a user inserts in the chat input by typing `/` and its command. The command is stored
 * as sent (Open WebUI's front end strips the leading `/`) and is unique across everyone. Every
 * change of the name, command, text, tags or grants writes a version (prompt_history) that
 * becomes the active `version_id`. Who sees a prompt: its owner, admins, and whoever its grants
 * reach (a user, a group, or `user:*` for everyone); creating one needs `workspace.prompts`
 * (or `workspace.prompts_import`) unless the caller is an admin.
 */

const json = z.record(z.string(), z.unknown());
const epoch = z.number().int();

/** PromptForm: create and update. `name` was `title` before 0.7; 0.10.2 wants `name`. */
export const PromptForm = z.object({
  command: z.string(),
  name: z.string(),
  content: z.string(),
  data: json.nullish(),
  meta: json.nullish(),
  tags: z.array(z.string()).nullish(),
  access_grants: z.array(AccessGrantForm).nullish(),
  version_id: z.string().nullish(),
  commit_message: z.string().nullish(),
  /** false: the update is written as a version but the active one stays. */
  is_production: z.boolean().nullish(),
});
export type PromptForm = z.output<typeof PromptForm>;

export const PromptAccessGrantsForm = z.object({ access_grants: z.array(AccessGrantForm) });

/** PromptModel, field for field. */
export const PromptModel = z.object({
  id: z.string(),
  command: z.string(),
  user_id: z.string(),
  name: z.string(),
  content: z.string(),
  data: json.nullable(),
  meta: json.nullable(),
  tags: z.array(z.string()),
  is_active: z.boolean(),
  version_id: z.string().nullable(),
  created_at: epoch,
  updated_at: epoch,
  access_grants: z.array(AccessGrant),
});
export type PromptModel = z.infer<typeof PromptModel>;

/** The prompt's owner as lists show them (UserResponse: no settings, no secrets). */
export const PromptOwner = z.object({ id: z.string(), name: z.string(), email: z.string(), role: z.string(), profile_image_url: z.string() });
export const PromptAccessResponse = PromptModel.extend({ user: PromptOwner.nullable(), write_access: z.boolean() });
export type PromptAccessResponse = z.infer<typeof PromptAccessResponse>;
/** GET /list: one page (30) and the total that matched. */
export const PromptAccessListResponse = z.object({ items: z.array(PromptAccessResponse), total: z.number().int() });

/** One version: what the prompt said then (name, content, command, data, meta, tags, access_grants). */
export const PromptHistoryResponse = z.object({
  id: z.string(),
  prompt_id: z.string(),
  parent_id: z.string().nullable(),
  snapshot: json,
  user_id: z.string(),
  commit_message: z.string().nullable(),
  created_at: epoch,
  user: PromptOwner.nullable(),
});

export const PROMPTS_OPS = catalog({
  /** Every prompt the caller may read (admins: all), newest change first. */
  'prompts.list': { subject: 'chat.prompts.list', routes: [GET('/api/v1/prompts/')], reply: z.array(PromptModel), auth: 'verified', events: [] },
  /** The tags of the prompts the caller may read, sorted. */
  'prompts.tags': { subject: 'chat.prompts.tags', routes: [GET('/api/v1/prompts/tags')], reply: z.array(z.string()), auth: 'verified', events: [] },
  /** The workspace's page: `query` (name, command, text, owner), `view_option` (`created`/`shared`), `tag`, `order_by` (`name`, `created_at`, `updated_at`), `direction`, `page` (30 a page). */
  'prompts.listPage': { subject: 'chat.prompts.listPage', routes: [GET('/api/v1/prompts/list')], reply: PromptAccessListResponse, auth: 'verified', events: [] },
  'prompts.create': { subject: 'chat.prompts.create', routes: [POST('/api/v1/prompts/create')], body: PromptForm, reply: PromptModel, auth: 'verified', events: ['prompt.created'] },
  'prompts.byCommand': { subject: 'chat.prompts.byCommand', routes: [GET('/api/v1/prompts/command/:command')], reply: PromptAccessResponse, auth: 'verified', events: [] },
  'prompts.get': { subject: 'chat.prompts.get', routes: [GET('/api/v1/prompts/id/:id')], reply: PromptAccessResponse, auth: 'verified', events: [] },
  'prompts.update': { subject: 'chat.prompts.update', routes: [POST('/api/v1/prompts/id/:id/update')], body: PromptForm, reply: PromptModel, auth: 'verified', events: ['prompt.updated'] },
  'prompts.updateAccess': {
    subject: 'chat.prompts.updateAccess',
    routes: [POST('/api/v1/prompts/id/:id/access/update')],
    body: PromptAccessGrantsForm,
    reply: PromptModel,
    auth: 'verified',
    events: ['prompt.updated'],
  },
  'prompts.delete': { subject: 'chat.prompts.delete', routes: [DELETE('/api/v1/prompts/id/:id/delete')], reply: z.boolean(), auth: 'verified', events: ['prompt.deleted'] },
  /** Its versions, newest first, 20 a page (`page` from 0). */
  'prompts.history': { subject: 'chat.prompts.history', routes: [GET('/api/v1/prompts/id/:id/history')], reply: z.array(PromptHistoryResponse), auth: 'verified', events: [] },
});
