import { randomUUID } from 'node:crypto';
import {
  OWUI_ERRORS,
} from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type OpReply, type Tx, type UserRow } from '../context.ts';
import {
  countFolderChats,
  deleteFolderTree,
  existingIds,
  folderChats,
  getFolder,
  insertFolder,
  lockFolder,
  lockOwnFolder,
  nameTaken,
  ownsFolder,
  replaceGrants,
  serialiseMoves,
  setExpanded,
  setParent,
  updateFolder,
  userFolders,
} from './folders.store.ts';
import {
  atLeast,
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
  return (await getFolder(tx, id)) ?? fail(404, OWUI_ERRORS.notFound);
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

async function validatePrincipals(tx: Tx, grants: { principal_type: 'user' | 'group'; principal_id: string }[]): Promise<void> {
  const userIds = [...new Set(grants.filter((g) => g.principal_type === 'user' && g.principal_id !== '*').map((g) => g.principal_id))];
  const groupIds = [...new Set(grants.filter((g) => g.principal_type === 'group').map((g) => g.principal_id))];
  if (userIds.length) {
    const known = await existingIds(tx, 'user', userIds);
    const unknown = userIds.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown user in access_grants: ${unknown}`);
  }
  if (groupIds.length) {
    const known = await existingIds(tx, 'group', groupIds);
    const unknown = groupIds.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown group in access_grants: ${unknown}`);
  }
}

/** Whether `user` may delete `folder`: its owner, an admin, or write reaching it from above. */
/** Users a set of grants reaches (user grants, members of granted groups; `*` kept as is), sorted. */
async function grantees(tx: Tx, grants: readonly { principal_type: string; principal_id: string }[]): Promise<string[]> {
  const ids = new Set(grants.filter((g) => g.principal_type === 'user').map((g) => g.principal_id));
  const groups = [...new Set(grants.filter((g) => g.principal_type === 'group').map((g) => g.principal_id))];
  if (groups.length) {
    const rows = await tx<{ user_id: string }[]>`select distinct user_id from group_member where group_id = any(${groups}::text[])`;
    for (const r of rows) ids.add(r.user_id);
  }
  return [...ids].sort();
}

/**
 * Who sees `folderIds` through a grant (on them or on an ancestor): the live stream's audience for
 * a change to them (rename, move, delete), named in the event as `user_ids`.
 */
async function audience(tx: Tx, folderIds: readonly string[]): Promise<string[]> {
  if (folderIds.length === 0) return [];
  const grants = await tx<{ principal_type: string; principal_id: string }[]>`
    with recursive up (id, parent_id) as (
      select id, parent_id from folder where id = any(${folderIds as string[]}::text[])
      union
      select f.id, f.parent_id from folder f join up on f.id = up.parent_id
    )
    select distinct g.principal_type, g.principal_id from access_grant g join up on g.resource_id = up.id
    where g.resource_type = 'folder'`;
  return grantees(tx, grants);
}

/** `user_ids` only when someone besides the owner sees the folder: an unshared folder's events stay as they were. */
const audienceField = (ids: string[]): { user_ids?: string[] } => (ids.length ? { user_ids: ids } : {});

async function mayDelete(ctx: OpContext, user: UserRow, folder: FolderRow): Promise<boolean> {
  if (folder.user_id === user.id || user.role === 'admin') return true;
  // A write grant on the folder itself lets a grantee fill it, not remove the owner's shared root.
  if (!folder.parent_id) return false;
  const parent = await folderAccess(ctx.sql, user, folder.parent_id);
  return Boolean(parent && atLeast(parent.access, 'write'));
}

export const foldersOps = opTable({

  'folders.list': async (_req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    return ok((await userFolders(ctx.sql, user.id)).map(folderNameId));
  },

  'folders.create': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = stripNul(req.body);
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
      await insertFolder(tx, { id, parentId, ownerId, name: form.name, meta: form.meta, data: form.data }, t);
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
    const form = stripNul(req.body);
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
      await updateFolder(tx, id, { name: form.name ?? before.name, data, meta }, now());
      const after = await loadFolder(tx, id);
      await ctx.emit(tx, 'folder.updated', { actor: user, subject: { type: 'folder', id }, data: { name: after.name, ...audienceField(await audience(tx, [id])) } });
      return after;
    });
    return ok(folderModel(folder));
  },

  'folders.updateParent': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = req.body;
    const id = req.params.id ?? '';
    const parentId = form.parent_id ?? null;
    const folder = await folderWrite(ctx, async (tx) => {
      await serialiseMoves(tx, user.id);
      // Owner only: moving changes where the owner's tree keeps things.
      const own = await lockOwnFolder(tx, user.id, id);
      if (!own) fail(404, OWUI_ERRORS.notFound);
      if (parentId !== null) {
        if (!(await ownsFolder(tx, user.id, parentId))) fail(404, OWUI_ERRORS.notFound);
        if ((await subtreeIds(tx, id)).includes(parentId)) fail(400, owuiError('Cannot move a folder into itself or one of its sub-folders'));
      }
      if (await nameTaken(tx, user.id, parentId, own.name, id)) fail(400, FOLDER_EXISTS);
      // Grantees of the old place and of the new one both see the tree change.
      const before = await audience(tx, [id]);
      await setParent(tx, id, parentId, now());
      const user_ids = [...new Set([...before, ...(await audience(tx, [id]))])].sort();
      await ctx.emit(tx, 'folder.parent_updated', { actor: user, subject: { type: 'folder', id }, data: { parent_id: parentId, ...audienceField(user_ids) } });
      return loadFolder(tx, id);
    });
    return ok(folderModel(folder));
  },

  'folders.updateExpanded': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = req.body;
    const found = await readableFolder(ctx.sql, user, req.params.id ?? '');
    // The flag is the owner's view state; Open WebUI answers a grantee with the folder unchanged.
    if (found.folder.user_id !== user.id) return ok(folderModel(found.folder));
    const folder = await setExpanded(ctx.sql, found.folder.id, form.is_expanded, now());
    return ok(folderModel(folder ?? fail(404, OWUI_ERRORS.notFound)));
  },

  'folders.updateAccess': async (req, ctx) => {
    await foldersEnabled(ctx);
    const user = me(ctx);
    const form = stripNul(req.body);
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
      await lockFolder(tx, folder.id);
      await validatePrincipals(tx, grants);
      const before = await grantsOf(tx, folder.id);
      await replaceGrants(tx, folder.id, grants, now());
      const stored = await grantsOf(tx, folder.id);
      await ctx.emit(tx, 'folder.access_updated', {
        actor: user,
        subject: { type: 'folder', id: folder.id },
        data: { grant_count: stored.length, user_ids: await grantees(tx, [...before, ...stored]) },
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
    const limit = page === undefined ? 60 : 10;
    const skip = page === undefined ? 0 : (page - 1) * limit;
    const rows = await folderChats(ctx.sql, folder.id, { byTitle: req.query.sort_by === 'title', ascending: req.query.sort_dir === 'asc', limit, skip });
    const body: OpReply<'folders.sharedChats'>['body'] = {
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
      const total = await countFolderChats(ctx.sql, folder.id);
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
      const user_ids = await audience(tx, ids);
      await deleteFolderTree(tx, folder, ids, deleteContents);
      await ctx.emit(tx, 'folder.deleted', {
        actor: user,
        subject: { type: 'folder', id: folder.id },
        data: { folder_ids: ids, delete_contents: deleteContents, ...audienceField(user_ids) },
      });
    });
    return ok(true);
  },
});
