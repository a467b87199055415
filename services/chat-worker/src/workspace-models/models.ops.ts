import { BusError } from '@gatehouse/common';
import { OWUI_ERRORS, WorkspaceModelForm, type WorkspaceModel, type WorkspaceModelAccess } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type Tx, type UserRow } from '../context.ts';
import { queryInt, stripNul, type AccessGrantRow } from '../access.ts';
import { isUniqueViolation, permissionsFor, profileImagePath } from '../auth/accounts.ops.ts';
import { cleanGrants } from '../access-grants.ts';
import type { ModelEntry } from '../config/models.ops.ts';
import type { RagItem } from '../retrieval/rag.ts';
import {
  deleteModel,
  granted,
  grantsOf,
  insertModel,
  modelById,
  modelsPage,
  ownerOf,
  replaceGrants,
  updateModel,
  writableByGrant,
  type ModelRow,
  type Owner,
} from './models.store.ts';

/**
 * Workspace models (Open WebUI 0.10.2 routers/models.py). Reading: the owner, an admin, or a
 * grant (read or write) that reaches the caller; to anyone else a model is Open WebUI's 401
 * "not found", whether it exists or not. Changing, toggling and deleting: the owner, an admin or
 * a write grant. Creating needs `workspace.models` for a non-admin, importing `models_import`,
 * exporting `models_export`.
 */

/** Open WebUI's messages for models (constants.py). */
export const MODEL_ERRORS = {
  unauthorized: '401 Unauthorized',
  idTaken: 'Uh-oh! This model id is already registered. Please choose another model id string.',
  idTooLong: 'The model id is too long. Please make sure your model id is less than 256 characters long.',
} as const;

/** Open WebUI's PAGE_ITEM_COUNT for /list. */
const PAGE = 30;
type Db = OpContext['sql'] | Tx;

const owner = (o: Owner | null) => (o ? { ...o, profile_image_url: profileImagePath(o.id) } : null);
const grantModel = (g: AccessGrantRow) => ({ id: g.id, principal_type: g.principal_type, principal_id: g.principal_id, permission: g.permission });
const model = (m: ModelRow, grants: readonly AccessGrantRow[]): WorkspaceModel => ({ ...m, access_grants: grants.map(grantModel) });

async function loadModel(db: Db, m: ModelRow): Promise<WorkspaceModel> {
  return model(m, (await grantsOf(db, [m.id])).get(m.id) ?? []);
}

async function hasPermission(ctx: OpContext, user: UserRow, key: 'models' | 'models_import' | 'models_export'): Promise<boolean> {
  if (user.role === 'admin') return true;
  const perms = (await permissionsFor(ctx.sql, user.id)) as { workspace?: Record<string, unknown> };
  return perms.workspace?.[key] === true;
}

const mayWrite = async (db: Db, user: UserRow, m: ModelRow) => user.role === 'admin' || m.user_id === user.id || (await granted(db, user, m.id, 'write'));
const mayRead = async (db: Db, user: UserRow, m: ModelRow) => user.role === 'admin' || m.user_id === user.id || (await granted(db, user, m.id, 'read'));


/** The `id` of a query string (`?id=`), as FastAPI's required str: missing is 422. */
function queryId(query: Record<string, string>): string {
  const id = query.id;
  if (id === undefined) throw new BusError(422, 'validation failed', { detail: [{ type: 'missing', loc: ['query', 'id'], msg: 'Field required', input: null }] });
  return stripNul(id);
}

/** The model by id, or Open WebUI's 401 "not found". */
async function found(db: Db, id: string, lock = false): Promise<ModelRow> {
  return (await modelById(db, id, lock)) ?? fail(401, OWUI_ERRORS.notFound);
}

/** Id, name and base as they may be stored: no NUL, the id within Open WebUI's 256. */
function checkedForm(form: WorkspaceModelForm): WorkspaceModelForm {
  const clean = stripNul(form);
  if (!clean.id.trim()) fail(400, 'The model id must not be empty');
  if (clean.id.length > 256) fail(400, MODEL_ERRORS.idTooLong);
  return clean;
}

/** A race for one id that the first look missed ends in the primary key. */
async function idGuard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (isUniqueViolation(err, 'model_pkey')) fail(401, MODEL_ERRORS.idTaken);
    throw err;
  }
}

async function create(ctx: OpContext, tx: Tx, user: UserRow, form: WorkspaceModelForm, t: number): Promise<WorkspaceModel> {
  const row = await insertModel(tx, {
    id: form.id,
    user_id: user.id,
    base_model_id: form.base_model_id ?? null,
    name: form.name,
    params: form.params,
    meta: form.meta,
    is_active: form.is_active ?? true,
    created_at: t,
    updated_at: t,
  });
  if (form.access_grants?.length) await replaceGrants(tx, row.id, await cleanGrants(tx, form.access_grants), t);
  await ctx.emit(tx, 'model.created', { actor: user, subject: { type: 'model', id: row.id }, data: { name: row.name, base_model_id: row.base_model_id } });
  return loadModel(tx, row);
}

async function update(ctx: OpContext, tx: Tx, user: UserRow, m: ModelRow, form: WorkspaceModelForm, t: number): Promise<WorkspaceModel> {
  const changed = [
    form.name !== m.name && 'name',
    (form.base_model_id ?? null) !== m.base_model_id && 'base_model_id',
    JSON.stringify(form.meta) !== JSON.stringify(m.meta) && 'meta',
    JSON.stringify(form.params) !== JSON.stringify(m.params) && 'params',
    form.is_active != null && form.is_active !== m.is_active && 'is_active',
    form.access_grants != null && 'access_grants',
  ].filter((f): f is string => typeof f === 'string');
  const next = await updateModel(tx, {
    ...m,
    base_model_id: form.base_model_id ?? null,
    name: form.name,
    meta: form.meta,
    params: form.params,
    is_active: form.is_active ?? m.is_active,
    updated_at: t,
  });
  if (form.access_grants != null) await replaceGrants(tx, m.id, await cleanGrants(tx, form.access_grants), t);
  await ctx.emit(tx, 'model.updated', {
    actor: user,
    subject: { type: 'model', id: m.id },
    data: { name: next.name, base_model_id: next.base_model_id, is_active: next.is_active, updated_fields: changed },
  });
  return loadModel(tx, next);
}

async function readable(ctx: OpContext, user: UserRow, filter: Parameters<typeof modelsPage>[2] = {}) {
  const { rows } = await modelsPage(ctx.sql, user, filter, null, 0);
  return rows;
}

async function withAccess(ctx: OpContext, user: UserRow, rows: (ModelRow & { owner: Owner | null })[]): Promise<WorkspaceModelAccess[]> {
  const ids = rows.map((r) => r.id);
  const [grants, writable] = await Promise.all([grantsOf(ctx.sql, ids), writableByGrant(ctx.sql, user, ids)]);
  return rows.map(({ owner: o, ...m }) => ({
    ...model(m, grants.get(m.id) ?? []),
    user: owner(o),
    write_access: user.role === 'admin' || m.user_id === user.id || writable.has(m.id),
  }));
}

export const workspaceModelsOps = opTable({
  'workspaceModels.listPage': async (req, ctx) => {
    const user = me(ctx);
    const q = req.query;
    const page = Math.max(queryInt(q, 'page', Number.MIN_SAFE_INTEGER) ?? 1, 1);
    const filter = { query: stripNul(q.query), view: q.view_option, tag: stripNul(q.tag), orderBy: q.order_by, direction: q.direction };
    const { rows, total } = await modelsPage(ctx.sql, user, filter, PAGE, (page - 1) * PAGE);
    return ok({ items: await withAccess(ctx, user, rows), total });
  },

  'workspaceModels.base': async (_req, ctx) => {
    const rows = await readable(ctx, me(ctx), { presets: false });
    const grants = await grantsOf(ctx.sql, rows.map((r) => r.id));
    return ok(rows.map(({ owner: _o, ...m }) => model(m, grants.get(m.id) ?? [])));
  },

  'workspaceModels.tags': async (_req, ctx) => {
    const names = new Set<string>();
    for (const r of await readable(ctx, me(ctx))) {
      const tags = r.meta.tags;
      if (!Array.isArray(tags)) continue;
      for (const t of tags) {
        const name = typeof t === 'string' ? t : (t as { name?: unknown } | null)?.name;
        if (typeof name === 'string' && name) names.add(name);
      }
    }
    return ok([...names].sort());
  },

  'workspaceModels.create': async (req, ctx) => {
    const user = me(ctx);
    if (!(await hasPermission(ctx, user, 'models'))) fail(401, MODEL_ERRORS.unauthorized);
    const form = checkedForm(req.body);
    if (await modelById(ctx.sql, form.id)) fail(401, MODEL_ERRORS.idTaken);
    return ok(await idGuard(() => ctx.sql.begin((tx) => create(ctx, tx, user, form, now()))));
  },

  'workspaceModels.get': async (req, ctx) => {
    const user = me(ctx);
    const m = await modelById(ctx.sql, queryId(req.query));
    if (!m || !(await mayRead(ctx.sql, user, m))) fail(401, OWUI_ERRORS.notFound);
    const [item] = await withAccess(ctx, user, [{ ...m, owner: await ownerOf(ctx.sql, m.user_id) }]);
    return ok(item!);
  },

  'workspaceModels.update': async (req, ctx) => {
    const user = me(ctx);
    const form = checkedForm(req.body);
    const updated = await ctx.sql.begin(async (tx) => {
      const m = await found(tx, form.id, true);
      if (!(await mayWrite(tx, user, m))) fail(400, OWUI_ERRORS.accessProhibited);
      return update(ctx, tx, user, m, form, now());
    });
    return ok(updated);
  },

  'workspaceModels.toggle': async (req, ctx) => {
    const user = me(ctx);
    const id = queryId(req.query);
    const toggled = await ctx.sql.begin(async (tx) => {
      const m = await found(tx, id, true);
      if (!(await mayWrite(tx, user, m))) fail(401, MODEL_ERRORS.unauthorized);
      const next = await updateModel(tx, { ...m, is_active: !m.is_active, updated_at: now() });
      await ctx.emit(tx, 'model.updated', {
        actor: user,
        subject: { type: 'model', id: m.id },
        data: { name: next.name, base_model_id: next.base_model_id, is_active: next.is_active, updated_fields: ['is_active'] },
      });
      return loadModel(tx, next);
    });
    return ok(toggled);
  },

  'workspaceModels.updateAccess': async (req, ctx) => {
    const user = me(ctx);
    const body = stripNul(req.body);
    const updated = await ctx.sql.begin(async (tx) => {
      const m = await found(tx, body.id, true);
      if (!(await mayWrite(tx, user, m))) fail(401, OWUI_ERRORS.accessProhibited);
      await replaceGrants(tx, m.id, await cleanGrants(tx, body.access_grants), now());
      await ctx.emit(tx, 'model.updated', {
        actor: user,
        subject: { type: 'model', id: m.id },
        data: { name: m.name, base_model_id: m.base_model_id, is_active: m.is_active, updated_fields: ['access_grants'] },
      });
      return loadModel(tx, m);
    });
    return ok(updated);
  },

  'workspaceModels.delete': async (req, ctx) => {
    const user = me(ctx);
    const id = stripNul(req.body.id);
    const done = await ctx.sql.begin(async (tx) => {
      const m = await found(tx, id, true);
      if (!(await mayWrite(tx, user, m))) fail(401, MODEL_ERRORS.unauthorized);
      const gone = await deleteModel(tx, m.id);
      if (gone) await ctx.emit(tx, 'model.deleted', { actor: user, subject: { type: 'model', id: m.id }, data: { name: m.name, base_model_id: m.base_model_id } });
      return gone;
    });
    return ok(done);
  },

  'workspaceModels.export': async (_req, ctx) => {
    const user = me(ctx);
    if (!(await hasPermission(ctx, user, 'models_export'))) fail(401, MODEL_ERRORS.unauthorized);
    const rows = await readable(ctx, user);
    const grants = await grantsOf(ctx.sql, rows.map((r) => r.id));
    return ok(rows.map(({ owner: _o, ...m }) => model(m, grants.get(m.id) ?? [])));
  },

  'workspaceModels.import': async (req, ctx) => {
    const user = me(ctx);
    if (!(await hasPermission(ctx, user, 'models_import'))) fail(401, MODEL_ERRORS.unauthorized);
    // Each entry is a ModelForm (an export's extra fields — user_id, timestamps — are ignored).
    const forms = req.body.models.map((raw, i) => {
      const parsed = WorkspaceModelForm.safeParse(raw);
      if (!parsed.success) fail(400, `models[${i}] is not a model: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      return checkedForm(parsed.data);
    });
    await idGuard(() =>
      ctx.sql.begin(async (tx) => {
        const t = now();
        for (const form of forms) {
          const m = await modelById(tx, form.id, true);
          if (!m) await create(ctx, tx, user, form, t);
          else if (await mayWrite(tx, user, m)) await update(ctx, tx, user, m, form, t);
          else fail(401, MODEL_ERRORS.unauthorized);
        }
      }),
    );
    return ok(true);
  },
});

// ---- what /api/models and completions make of the workspace models -------------------------

/**
 * The model list with the workspace's rows applied, as Open WebUI's get_all_models then
 * get_models do for `user`: a row without a base model overrides the base model of its id (name
 * and `info`; an inactive one hides it), a preset over a listed base model is added after the
 * base models with the row as `info` and the base's owner. Only the active rows the caller may
 * read are applied; an override the caller may not read leaves the base model as it is.
 */
export async function withWorkspaceModels(sql: OpContext['sql'], user: UserRow, base: readonly ModelEntry[]): Promise<ModelEntry[]> {
  const { rows } = await modelsPage(sql, user, {}, null, 0);
  if (!rows.length) return [...base];
  const grants = await grantsOf(sql, rows.map((r) => r.id));
  const info = (r: ModelRow) => ({ ...model(r, grants.get(r.id) ?? []) }) as unknown as ModelEntry['info'];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const out: ModelEntry[] = [];
  for (const m of base) {
    const o = byId.get(m.id);
    if (!o || o.base_model_id !== null) {
      out.push(m);
      continue;
    }
    if (!o.is_active) continue;
    out.push({ ...m, name: o.name, info: info(o) });
  }
  const known = new Set(out.map((m) => m.id));
  // Oldest first, as Open WebUI lists the rows it reads.
  for (const r of [...rows].sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id))) {
    if (!r.is_active || r.base_model_id === null || known.has(r.id)) continue;
    const b = base.find((m) => m.id === r.base_model_id);
    if (!b) continue;
    known.add(r.id);
    out.push({
      id: r.id,
      name: r.name,
      object: 'model',
      created: r.created_at,
      owned_by: b.owned_by,
      ...(b.connection_type !== undefined ? { connection_type: b.connection_type } : {}),
      info: info(r),
      preset: true,
      tags: [],
    });
  }
  return out;
}

/** A preset a completion names: the row (active, readable by the caller) or undefined. */
export async function presetFor(sql: OpContext['sql'], user: UserRow, id: string): Promise<ModelRow | undefined> {
  const m = await modelById(sql, id);
  if (!m || m.base_model_id === null || !m.is_active) return undefined;
  return (await mayRead(sql, user, m)) ? m : undefined;
}

/** The preset's attached knowledge as retrieval items (a knowledge base item without a type is a collection). */
export function presetKnowledge(m: ModelRow): RagItem[] {
  const raw = m.meta.knowledge;
  if (!Array.isArray(raw)) return [];
  const out: RagItem[] = [];
  for (const k of raw) {
    if (typeof k !== 'object' || k === null || Array.isArray(k)) continue;
    const item = k as Record<string, unknown>;
    if (typeof item.id !== 'string' || !item.id) continue;
    const type = item.type === 'file' ? 'file' : item.type === undefined || item.type === 'collection' ? 'collection' : null;
    if (type) out.push({ ...item, type, id: item.id });
  }
  return out;
}
