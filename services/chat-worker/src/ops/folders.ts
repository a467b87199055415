import { randomUUID } from 'node:crypto';
import {
  AccessGrantsForm,
  FolderExpandedForm,
  FolderForm,
  FolderParentForm,
  FolderUpdateForm,
  OWUI_ERRORS,
} from '@gatehouse/contracts';
import { fail, me, now, ok, parseBody, type OpContext, type OpTable, type Tx, type UserRow } from '../context.ts';
import {
  atLeast,
  FOLDER_COLUMNS,
  folderAccess,
  folderModel,
  grantsOf,
  queryBool,
  queryInt,
  readableFolder,
  sharedWith,
  stripNul,
  subtreeIds,
  type FolderRow,
} from '../access.ts';

/**
 * Folders and folder sharing (Open WebUI 0.10.2 routers/folders.py). Status codes follow Open
 * WebUI where it does not give away what exists: a folder the caller cannot read is a 404
 * everywhere (Open WebUI answers 403 on some routes), and 403 is kept only where the caller can
 * already see the folder but may not do this to it.
 */
/** ERROR_MESSAGES.DEFAULT(text): how Open WebUI words its own 400s. */
const owuiError = (text: string) => `[ERROR: ${text}]`;
const FOLDER_EXISTS = owuiError('Folder already exists');

/** check_folders_permission: the feature switch (per-user feature permissions are not modelled). */
async function foldersEnabled(ctx: OpContext): Promise<void> {
  if (!(await ctx.settings()).ENABLE_FOLDERS) fail(403, OWUI_ERRORS.accessProhibited);
}

/** Same name (any case) under the same parent of the same owner: the unique index's rule. */
async function nameTaken(tx: Tx | OpContext['sql'], ownerId: string, parentId: string | null, name: string, except?: string): Promise<boolean> {
  const [row] = await tx<{ id: string }[]>`
    select id from folder
    where user_id = ${ownerId} and coalesce(parent_id, '') = ${parentId ?? ''} and lower(name) = lower(${name})
      and id <> ${except ?? ''}
    limit 1`;
  return Boolean(row);
}

/**
 * A folder write in one transaction, with the races its checks cannot close answered as those
 * checks would: a unique-index violation (two writes of one name at once) is the same 400 as the
 * name check, a missing reference (the parent deleted meanwhile) the 404 of a gone folder.
 */
async function folderWrite<T>(ctx: OpContext, fn: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return (await ctx.sql.begin(fn)) as T;
  } catch (err) {
    const code = (err as { code?: string })?.code;
    if (code === '23505') fail(400, FOLDER_EXISTS);
    if (code === '23503') fail(404, OWUI_ERRORS.notFound);
    throw err;
  }
}

async function loadFolder(tx: Tx, id: string): Promise<FolderRow> {
  const [f] = await tx<FolderRow[]>`select ${tx(FOLDER_COLUMNS as unknown as string[])} from folder where id = ${id}`;
  return f ?? fail(404, OWUI_ERRORS.notFound);
}

/** FolderNameIdResponse: meta is narrowed to FolderMetadataResponse ({icon}). */
function folderNameId(f: FolderRow) {
  const icon = f.meta && typeof f.meta.icon === 'string' ? f.meta.icon : null;
  return {
    id: f.id,
    name: f.name,
    meta: f.meta ? { icon } : null,
    parent_id: f.parent_id,
    is_expanded: f.is_expanded,
    created_at: f.created_at,
    updated_at: f.updated_at,
  };
}

const jsonOrNull = (tx: Tx, v: Record<string, unknown> | null | undefined) => (v == null ? null : tx.json(v as never));

async function validatePrincipals(tx: Tx, grants: { principal_type: 'user' | 'group'; principal_id: string }[]): Promise<void> {
  const userIds = [...new Set(grants.filter((g) => g.principal_type === 'user' && g.principal_id !== '*').map((g) => g.principal_id))];
  const groupIds = [...new Set(grants.filter((g) => g.principal_type === 'group').map((g) => g.principal_id))];
  if (userIds.length) {
    const rows = await tx<{ id: string }[]>`select id from "user" where id = any(${tx.array(userIds)}::text[])`;
    const known = new Set(rows.map((r) => r.id));
    const unknown = userIds.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown user in access_grants: ${unknown}`);
  }
  if (groupIds.length) {
    const rows = await tx<{ id: string }[]>`select id from "group" where id = any(${tx.array(groupIds)}::text[])`;
    const known = new Set(rows.map((r) => r.id));
    const unknown = groupIds.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown group in access_grants: ${unknown}`);
  }
}

/** Whether `user` may delete `folder`: its owner, an admin, or write reaching it from above. */
async function mayDelete(ctx: OpContext, user: UserRow, folder: FolderRow): Promise<boolean> {
  if (folder.user_id === user.id || user.role === 'admin') return true;
  // A write grant on the folder itself lets a grantee fill it, not remove the owner's shared root.
  if (!folder.parent_id) return false;
  const parent = await folderAccess(ctx.sql, user, folder.parent_id);
  return Boolean(parent && atLeast(parent.access, 'write'));
}

export const foldersOps = {

  'folders.list': async (_req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const rows = await ctx.sql<FolderRow[]>`
      select ${ctx.sql(FOLDER_COLUMNS as unknown as string[])} from folder where user_id = ${user.id} order by created_at, id`;
    return ok(rows.map(folderNameId));
  },

  'folders.create': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = stripNul(parseBody(FolderForm, req.body));
    const parentId = form.parent_id ?? null;
    let ownerId = user.id;
    if (parentId !== null) {
      const parent = await readableFolder(ctx.sql, user, parentId);
      if (parent.folder.user_id !== user.id) {
        if (user.role !== 'admin' && !atLeast(parent.access, 'write')) fail(403, OWUI_ERRORS.accessProhibited);
        // The tree stays the owner's: a grantee's sub-folder belongs to the shared folder's owner.
        ownerId = parent.folder.user_id;
      }
    }
    const id = randomUUID();
    const t = now();
    const folder = await folderWrite(ctx, async (tx) => {
      if (await nameTaken(tx, ownerId, parentId, form.name)) fail(400, FOLDER_EXISTS);
      await tx`insert into folder (id, parent_id, user_id, name, items, meta, data, is_expanded, created_at, updated_at)
        values (${id}, ${parentId}, ${ownerId}, ${form.name}, null, ${jsonOrNull(tx, form.meta)}, ${jsonOrNull(tx, form.data)},
          false, ${t}, ${t})`;
      await ctx.emit(tx, 'folder.created', {
        actor: user,
        subject: { type: 'folder', id },
        data: { name: form.name, parent_id: parentId, owner_id: ownerId },
      });
      return loadFolder(tx, id);
    });
    return ok(folderModel(folder));
  },

  'folders.shared': async (_req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const rows = await sharedWith(ctx.sql, user);
    return ok(
      rows.map((r) => ({
        ...folderModel(r),
        owner_name: r.owner_name ?? 'Unknown',
        permission: r.level === 2 ? 'write' : 'read',
      })),
    );
  },

  'folders.get': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const { folder } = await readableFolder(ctx.sql, user, req.params.id ?? '');
    return ok({ ...folderModel(folder), access_grants: await grantsOf(ctx.sql, folder.id) });
  },

  'folders.update': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = stripNul(parseBody(FolderUpdateForm, req.body));
    const found = await folderAccess(ctx.sql, user, req.params.id ?? '');
    // Open WebUI answers 404 to anyone without write here, readers included.
    if (!found || (!atLeast(found.access, 'write') && user.role !== 'admin')) fail(404, OWUI_ERRORS.notFound);
    const id = found.folder.id;
    const folder = await folderWrite(ctx, async (tx) => {
      const before = await loadFolder(tx, id);
      if (form.name != null && (await nameTaken(tx, before.user_id, before.parent_id, form.name, id))) fail(400, FOLDER_EXISTS);
      // data and meta are merged key by key into what is stored (Open WebUI's update).
      const data = form.data != null ? { ...(before.data ?? {}), ...form.data } : before.data;
      const meta = form.meta != null ? { ...(before.meta ?? {}), ...form.meta } : before.meta;
      await tx`update folder set name = ${form.name ?? before.name}, data = ${jsonOrNull(tx, data)}, meta = ${jsonOrNull(tx, meta)},
        updated_at = ${now()} where id = ${id}`;
      const after = await loadFolder(tx, id);
      await ctx.emit(tx, 'folder.updated', { actor: user, subject: { type: 'folder', id }, data: { name: after.name } });
      return after;
    });
    return ok(folderModel(folder));
  },

  'folders.updateParent': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = parseBody(FolderParentForm, req.body);
    const id = req.params.id ?? '';
    const parentId = form.parent_id ?? null;
    const folder = await folderWrite(ctx, async (tx) => {
      // One move at a time per owner, so two crossing moves cannot both pass the cycle check.
      await tx`select pg_advisory_xact_lock(hashtext(${'folder-move:' + user.id}))`;
      // Owner only: moving changes where the owner's tree keeps things.
      const [own] = await tx<FolderRow[]>`select ${tx(FOLDER_COLUMNS as unknown as string[])} from folder where id = ${id} and user_id = ${user.id} for update`;
      if (!own) fail(404, OWUI_ERRORS.notFound);
      if (parentId !== null) {
        const [target] = await tx<{ id: string }[]>`select id from folder where id = ${parentId} and user_id = ${user.id}`;
        if (!target) fail(404, OWUI_ERRORS.notFound);
        if ((await subtreeIds(tx, id)).includes(parentId)) fail(400, owuiError('Cannot move a folder into itself or one of its sub-folders'));
      }
      if (await nameTaken(tx, user.id, parentId, own.name, id)) fail(400, FOLDER_EXISTS);
      await tx`update folder set parent_id = ${parentId}, updated_at = ${now()} where id = ${id}`;
      await ctx.emit(tx, 'folder.parent_updated', { actor: user, subject: { type: 'folder', id }, data: { parent_id: parentId } });
      return loadFolder(tx, id);
    });
    return ok(folderModel(folder));
  },

  'folders.updateExpanded': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = parseBody(FolderExpandedForm, req.body);
    const found = await readableFolder(ctx.sql, user, req.params.id ?? '');
    // The flag is the owner's view state; Open WebUI answers a grantee with the folder unchanged.
    if (found.folder.user_id !== user.id) return ok(folderModel(found.folder));
    const [folder] = await ctx.sql<FolderRow[]>`
      update folder set is_expanded = ${form.is_expanded}, updated_at = ${now()} where id = ${found.folder.id}
      returning ${ctx.sql(FOLDER_COLUMNS as unknown as string[])}`;
    return ok(folderModel(folder ?? fail(404, OWUI_ERRORS.notFound)));
  },

  'folders.updateAccess': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = stripNul(parseBody(AccessGrantsForm, req.body));
    const { folder, access } = await readableFolder(ctx.sql, user, req.params.id ?? '');
    if (user.role !== 'admin' && !atLeast(access, 'write')) fail(403, OWUI_ERRORS.accessProhibited);
    if (form.access_grants.some((g) => g.principal_type === 'group' && g.principal_id === '*')) {
      fail(400, 'The everyone grant is principal_type "user" with principal_id "*"');
    }
    // One row per (principal, permission), as the table's unique key and normalize_access_grants.
    const seen = new Set<string>();
    const grants = form.access_grants.filter((g) => {
      const k = `${g.principal_type}\u0001${g.principal_id}\u0001${g.permission}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    const result = await ctx.sql.begin(async (tx) => {
      await tx`select id from folder where id = ${folder.id} for update`;
      await validatePrincipals(tx, grants);
      await tx`delete from access_grant where resource_type = 'folder' and resource_id = ${folder.id}`;
      const t = now();
      for (const g of grants) {
        await tx`insert into access_grant (id, resource_type, resource_id, principal_type, principal_id, permission, created_at)
          values (${randomUUID()}, 'folder', ${folder.id}, ${g.principal_type}, ${g.principal_id}, ${g.permission}, ${t})`;
      }
      const stored = await grantsOf(tx, folder.id);
      await ctx.emit(tx, 'folder.access_updated', {
        actor: user,
        subject: { type: 'folder', id: folder.id },
        data: { grant_count: stored.length },
      });
      return { folder: await loadFolder(tx, folder.id), grants: stored };
    });
    return ok({ ...folderModel(result.folder), access_grants: result.grants });
  },

  'folders.sharedChats': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const { folder, access } = await readableFolder(ctx.sql, user, req.params.id ?? '');
    const write = user.role === 'admin' || atLeast(access, 'write');
    const page = queryInt(req.query, 'page', 1);
    const sortBy = req.query.sort_by === 'title' ? 'title' : 'updated_at';
    const dir = req.query.sort_dir === 'asc' ? ctx.sql`asc` : ctx.sql`desc`;
    const limit = page === undefined ? 60 : 10;
    const skip = page === undefined ? 0 : (page - 1) * limit;
    // Every user's chats in this folder (a write grantee's own chats live here too); pinned and
    // archived ones stay in their owners' own lists, as in Open WebUI.
    const rows = await ctx.sql<{ id: string; title: string; user_id: string; updated_at: number; created_at: number; owner_name: string | null }[]>`
      select c.id, c.title, c.user_id, c.updated_at, c.created_at, u.name as owner_name
      from chat c left join "user" u on u.id = c.user_id
      where c.folder_id = ${folder.id} and not c.pinned and not c.archived
      order by ${sortBy === 'title' ? ctx.sql`c.title` : ctx.sql`c.updated_at`} ${dir}, c.id
      limit ${limit} offset ${skip}`;
    const body: Record<string, unknown> = {
      chats: rows.map((c) => ({
        id: c.id,
        title: c.title,
        user_id: c.user_id,
        updated_at: c.updated_at,
        created_at: c.created_at,
        owner_name: c.owner_name ?? 'Unknown',
        readonly: c.user_id !== user.id,
      })),
      folder_permission: write ? 'write' : 'read',
    };
    if (page !== undefined) {
      const [count] = await ctx.sql<{ total: number }[]>`
        select count(*)::int as total from chat where folder_id = ${folder.id} and not pinned and not archived`;
      const total = count?.total ?? 0;
      body.total = total;
      body.has_more = skip + limit < total;
    }
    return ok(body);
  },

  'folders.delete': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const deleteContents = queryBool(req.query, 'delete_contents', true);
    const { folder } = await readableFolder(ctx.sql, user, req.params.id ?? '');
    if (!(await mayDelete(ctx, user, folder))) fail(403, OWUI_ERRORS.accessProhibited);
    await ctx.sql.begin(async (tx) => {
      const ids = await subtreeIds(tx, folder.id);
      // The owner's chats go with the folders (or back to their root); other users' chats in a
      // shared folder are theirs and fall back to their own root (chat.folder_id on delete set null).
      if (deleteContents) await tx`delete from chat where user_id = ${folder.user_id} and folder_id = any(${tx.array(ids)}::text[])`;
      else await tx`update chat set folder_id = null where user_id = ${folder.user_id} and folder_id = any(${tx.array(ids)}::text[])`;
      await tx`delete from access_grant where resource_type = 'folder' and resource_id = any(${tx.array(ids)}::text[])`;
      await tx`delete from folder where id = ${folder.id}`;
      await ctx.emit(tx, 'folder.deleted', {
        actor: user,
        subject: { type: 'folder', id: folder.id },
        data: { folder_ids: ids, delete_contents: deleteContents },
      });
    });
    return ok(true);
  },
} satisfies OpTable;
