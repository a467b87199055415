import { randomUUID } from 'node:crypto';
import { OWUI_ERRORS, type PromptAccessResponse, type PromptForm, type PromptModel } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type Tx, type UserRow } from '../context.ts';
import { queryInt, stripNul, type AccessGrantRow } from '../access.ts';
import { isUniqueViolation, permissionsFor, profileImagePath } from '../auth/accounts.ops.ts';
import { cleanGrants } from '../access-grants.ts';
import {
  deletePrompt,
  granted,
  grantsOf,
  historyOf,
  insertHistory,
  insertPrompt,
  latestVersionId,
  ownerOf,
  promptByCommand,
  promptById,
  promptsPage,
  replaceGrants,
  setVersion,
  updatePrompt,
  writableByGrant,
  type Owner,
  type PromptRow,
} from './prompts.store.ts';

/**
 * Workspace prompts (Open WebUI 0.10.2 routers/prompts.py). Reading: the owner, an admin, or a
 * grant (read or write) that reaches the caller; anyone else gets the 404 of a prompt that does
 * not exist. Changing and deleting: the owner, an admin or a write grant, else Open WebUI's 401
 * "access prohibited". Creating needs `workspace.prompts` (or `prompts_import`) for a non-admin.
 */

/** Open WebUI's messages for prompts (constants.py). */
export const PROMPT_ERRORS = {
  unauthorized: '401 Unauthorized',
  commandTaken: 'Uh-oh! This command is already registered. Please choose another command string.',
  commandInUse: (command: string) => `Command '/${command}' is already in use by another prompt`,
} as const;

/** Open WebUI's PAGE_ITEM_COUNT for /list; history pages are 20. */
const PAGE = 30;
const HISTORY_PAGE = 20;

const owner = (o: Owner | null) => (o ? { ...o, profile_image_url: profileImagePath(o.id) } : null);
const grantModel = (g: AccessGrantRow) => ({ id: g.id, principal_type: g.principal_type, principal_id: g.principal_id, permission: g.permission });
const model = (p: PromptRow, grants: readonly AccessGrantRow[]): PromptModel => ({ ...p, access_grants: grants.map(grantModel) });

async function loadModel(db: OpContext['sql'] | Tx, p: PromptRow): Promise<PromptModel> {
  return model(p, (await grantsOf(db, [p.id])).get(p.id) ?? []);
}

async function canCreate(ctx: OpContext, user: UserRow): Promise<boolean> {
  if (user.role === 'admin') return true;
  const perms = (await permissionsFor(ctx.sql, user.id)) as { workspace?: { prompts?: unknown; prompts_import?: unknown } };
  return perms.workspace?.prompts === true || perms.workspace?.prompts_import === true;
}

const mayWrite = async (db: OpContext['sql'] | Tx, user: UserRow, p: PromptRow) => user.role === 'admin' || p.user_id === user.id || (await granted(db, user, p.id, 'write'));
const mayRead = async (db: OpContext['sql'] | Tx, user: UserRow, p: PromptRow) => user.role === 'admin' || p.user_id === user.id || (await granted(db, user, p.id, 'read'));


/** Write a version of what the prompt says now; returns its id. */
async function writeVersion(tx: Tx, user: UserRow, p: PromptRow, message: string | null, t: number): Promise<string> {
  const grants = (await grantsOf(tx, [p.id])).get(p.id) ?? [];
  const id = randomUUID();
  await insertHistory(tx, {
    id,
    prompt_id: p.id,
    parent_id: await latestVersionId(tx, p.id),
    snapshot: { name: p.name, content: p.content, command: p.command, data: p.data ?? {}, meta: p.meta ?? {}, tags: p.tags, access_grants: grants.map(grantModel) },
    user_id: user.id,
    commit_message: message,
    created_at: t,
  });
  return id;
}

/** A command is one prompt's: a race that the first look missed ends in the unique index. */
async function commandGuard<T>(run: () => Promise<T>, message: string): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (isUniqueViolation(err, 'prompt_command')) fail(400, message);
    throw err;
  }
}

/** The prompt by id, or Open WebUI's 404. */
async function found(db: OpContext['sql'] | Tx, id: string, lock = false): Promise<PromptRow> {
  return (await promptById(db, id, lock)) ?? fail(404, OWUI_ERRORS.notFound);
}

async function withAccess(ctx: OpContext, user: UserRow, p: PromptRow | undefined): Promise<PromptAccessResponse> {
  if (!p || !(await mayRead(ctx.sql, user, p))) fail(404, OWUI_ERRORS.notFound);
  return { ...(await loadModel(ctx.sql, p)), user: owner(await ownerOf(ctx.sql, p.user_id)), write_access: await mayWrite(ctx.sql, user, p) };
}

async function update(ctx: OpContext, user: UserRow, id: string, form: PromptForm): Promise<PromptModel> {
  return commandGuard(
    () =>
      ctx.sql.begin(async (tx) => {
        const p = await found(tx, id, true);
        if (!(await mayWrite(tx, user, p))) fail(401, OWUI_ERRORS.accessProhibited);
        if (form.command !== p.command) {
          const other = await promptByCommand(tx, form.command);
          if (other && other.id !== p.id) fail(400, PROMPT_ERRORS.commandInUse(form.command));
        }
        const t = now();
        const changed = [
          form.name !== p.name && 'name',
          form.command !== p.command && 'command',
          form.content !== p.content && 'content',
          form.tags != null && JSON.stringify(form.tags) !== JSON.stringify(p.tags) && 'tags',
          form.access_grants != null && 'access_grants',
        ].filter((f): f is string => typeof f === 'string');
        // Open WebUI keeps the stored data/meta when the form's are empty (its `or`).
        const keep = (v: Record<string, unknown> | null | undefined, old: Record<string, unknown> | null) => (v && Object.keys(v).length ? v : old);
        let next: PromptRow = {
          ...p,
          name: form.name,
          command: form.command,
          content: form.content,
          data: keep(form.data, p.data),
          meta: keep(form.meta, p.meta),
          tags: form.tags ?? p.tags,
          updated_at: t,
        };
        next = await updatePrompt(tx, next);
        if (form.access_grants != null) await replaceGrants(tx, p.id, await cleanGrants(tx, form.access_grants), t);
        if (changed.length) {
          const version = await writeVersion(tx, user, next, form.commit_message ?? null, t);
          // An absent `is_production` is Pydantic's default True; an explicit null is not.
          const production = form.is_production === undefined ? true : form.is_production === true;
          if (production) {
            await setVersion(tx, p.id, version);
            next = { ...next, version_id: version };
          }
        }
        await ctx.emit(tx, 'prompt.updated', {
          actor: user,
          subject: { type: 'prompt', id: p.id },
          data: { command: next.command, name: next.name, version_id: next.version_id, updated_fields: changed },
        });
        return loadModel(tx, next);
      }),
    PROMPT_ERRORS.commandInUse(form.command),
  );
}

export const promptsOps = opTable({
  'prompts.list': async (_req, ctx) => {
    const { rows } = await promptsPage(ctx.sql, me(ctx), {}, null, 0);
    const grants = await grantsOf(ctx.sql, rows.map((r) => r.id));
    return ok(rows.map(({ owner: _o, ...p }) => model(p, grants.get(p.id) ?? [])));
  },

  'prompts.tags': async (_req, ctx) => {
    const { rows } = await promptsPage(ctx.sql, me(ctx), {}, null, 0);
    return ok([...new Set(rows.flatMap((r) => r.tags))].sort());
  },

  'prompts.listPage': async (req, ctx) => {
    const user = me(ctx);
    const q = req.query;
    const page = Math.max(queryInt(q, 'page', Number.MIN_SAFE_INTEGER) ?? 1, 1);
    const filter = { query: stripNul(q.query), view: q.view_option, tag: stripNul(q.tag), orderBy: q.order_by, direction: q.direction };
    const { rows, total } = await promptsPage(ctx.sql, user, filter, PAGE, (page - 1) * PAGE);
    const ids = rows.map((r) => r.id);
    const [grants, writable] = await Promise.all([grantsOf(ctx.sql, ids), writableByGrant(ctx.sql, user, ids)]);
    const items = rows.map(({ owner: o, ...p }) => ({
      ...model(p, grants.get(p.id) ?? []),
      user: owner(o),
      write_access: user.role === 'admin' || p.user_id === user.id || writable.has(p.id),
    }));
    return ok({ items, total });
  },

  'prompts.create': async (req, ctx) => {
    const user = me(ctx);
    if (!(await canCreate(ctx, user))) fail(401, PROMPT_ERRORS.unauthorized);
    const form = stripNul(req.body);
    if (await promptByCommand(ctx.sql, form.command)) fail(400, PROMPT_ERRORS.commandTaken);
    const t = now();
    const created = await commandGuard(
      () =>
        ctx.sql.begin(async (tx) => {
          const id = randomUUID();
          const row = await insertPrompt(tx, {
            id,
            command: form.command,
            user_id: user.id,
            name: form.name,
            content: form.content,
            data: form.data ?? {},
            meta: form.meta ?? {},
            tags: form.tags ?? [],
            is_active: true,
            version_id: null,
            created_at: t,
            updated_at: t,
          });
          if (form.access_grants?.length) await replaceGrants(tx, id, await cleanGrants(tx, form.access_grants), t);
          const version = await writeVersion(tx, user, row, form.commit_message ?? 'Initial version', t);
          await setVersion(tx, id, version);
          await ctx.emit(tx, 'prompt.created', { actor: user, subject: { type: 'prompt', id }, data: { command: row.command, name: row.name } });
          return loadModel(tx, { ...row, version_id: version });
        }),
      PROMPT_ERRORS.commandTaken,
    );
    return ok(created);
  },

  'prompts.byCommand': async (req, ctx) => {
    const user = me(ctx);
    return ok(await withAccess(ctx, user, await promptByCommand(ctx.sql, stripNul(req.params.command ?? ''))));
  },

  'prompts.get': async (req, ctx) => {
    const user = me(ctx);
    return ok(await withAccess(ctx, user, await promptById(ctx.sql, req.params.id ?? '')));
  },

  'prompts.update': async (req, ctx) => ok(await update(ctx, me(ctx), req.params.id ?? '', stripNul(req.body))),

  'prompts.updateAccess': async (req, ctx) => {
    const user = me(ctx);
    const body = req.body;
    const updated = await ctx.sql.begin(async (tx) => {
      const p = await found(tx, req.params.id ?? '', true);
      if (!(await mayWrite(tx, user, p))) fail(401, OWUI_ERRORS.accessProhibited);
      await replaceGrants(tx, p.id, await cleanGrants(tx, body.access_grants), now());
      await ctx.emit(tx, 'prompt.updated', {
        actor: user,
        subject: { type: 'prompt', id: p.id },
        data: { command: p.command, name: p.name, version_id: p.version_id, updated_fields: ['access_grants'] },
      });
      return loadModel(tx, p);
    });
    return ok(updated);
  },

  'prompts.delete': async (req, ctx) => {
    const user = me(ctx);
    const done = await ctx.sql.begin(async (tx) => {
      const p = await found(tx, req.params.id ?? '', true);
      if (!(await mayWrite(tx, user, p))) fail(401, OWUI_ERRORS.accessProhibited);
      const gone = await deletePrompt(tx, p.id);
      if (gone) await ctx.emit(tx, 'prompt.deleted', { actor: user, subject: { type: 'prompt', id: p.id }, data: { command: p.command, name: p.name } });
      return gone;
    });
    return ok(done);
  },

  'prompts.history': async (req, ctx) => {
    const user = me(ctx);
    const p = await found(ctx.sql, req.params.id ?? '');
    if (!(await mayRead(ctx.sql, user, p))) fail(401, OWUI_ERRORS.accessProhibited);
    const page = Math.max(queryInt(req.query, 'page', Number.MIN_SAFE_INTEGER) ?? 0, 0);
    const rows = await historyOf(ctx.sql, p.id, HISTORY_PAGE, page * HISTORY_PAGE);
    return ok(rows.map(({ owner: o, ...h }) => ({ ...h, user: owner(o) })));
  },
});
