import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import {
  OWUI_ERRORS,
} from '@gatehouse/contracts';
import type { ChatOpRequest } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type Tx, type UserRow } from '../context.ts';
import { queryBool, queryInt, stripNul, type AccessGrantRow } from '../access.ts';
import { existingIds } from '../folders/folders.store.ts';
import {
  grantsByKnowledge,
  knowledgeGrants,
  readableKnowledge,
  writableAmong,
  writableKnowledge,
  type KnowledgeRow,
} from './access.ts';
import {
  breadcrumbs,
  checkDirName,
  childDirectories,
  deleteDirectory,
  DIR_CREATE_FAILED,
  DIR_UPDATE_FAILED,
  getDirectory,
  insertDirectory,
  TARGET_DIR_NOT_FOUND,
  updateDirectory,
  type DirectoryRow,
} from './directories.ts';
import { linkFile } from './links.ts';
import { dropUnusedBlob } from './files.ops.ts';
import { syncDiff } from './sync.ts';
import { exportEntries, exportFileName, knowledgeZip } from './export.ts';
import { contentDisposition, replyWithBytes } from './object-reply.ts';
// The routes' SQL; this file keeps the handlers, the access checks and the events.
import {
  basesPage,
  deleteFileRow,
  deleteKnowledge,
  deleteLink,
  fileMetadatas,
  filesByIds,
  getFile,
  getKnowledge,
  type FileRow,
  type Grant,
  groupMemberIds,
  inReadableBase,
  insertKnowledge,
  knowledgeFilesPage,
  linked,
  linkedFileIds,
  lockKnowledge,
  moveLink,
  pendingFiles,
  replaceGrants,
  resetKnowledge,
  searchFilesPage,
  updateKnowledge,
} from './knowledge.store.ts';

/**
 * Knowledge bases (Open WebUI 0.10.2 routers/knowledge.py): bases with read/write grants, their
 * files and directory tree, folder sync and reindexing. A file's chunks belong to the file
 * (file_chunk), so adding a processed file to a base copies nothing and removing it deletes
 * nothing but the link; search joins through knowledge_file. Status codes are Open WebUI's, except
 * that a base the caller may not read is a 404 on every route (Open WebUI answers 400/401 on some,
 * which tells a stranger the id exists).
 */
const PAGE = 30;
/** ERROR_MESSAGES.FILE_NOT_PROCESSED */
const FILE_NOT_PROCESSED = 'Extracted content is not available for this file. Please ensure that the file is processed before proceeding.';
/** ERROR_MESSAGES.UNAUTHORIZED */
const UNAUTHORIZED = '401 Unauthorized';

type Db = Sql | Tx;

/** A write in one transaction; a reference gone meanwhile (base or directory deleted) is their 404. */
async function kbWrite<T>(ctx: OpContext, fn: (tx: Tx) => Promise<T>, uniqueDetail = DIR_CREATE_FAILED): Promise<T> {
  try {
    return (await ctx.sql.begin(fn)) as T;
  } catch (err) {
    const code = (err as { code?: string })?.code;
    if (code === '23505') fail(400, uniqueDetail);
    if (code === '23503') fail(404, OWUI_ERRORS.notFound);
    throw err;
  }
}

/**
 * A path parameter. Postgres refuses NUL in text, so an id carrying one would fail the query (a
 * 500); without it, it is just an id that does not exist.
 */
const param = (req: ChatOpRequest, name: string): string => stripNul(req.params[name] ?? '');

// ---- shapes --------------------------------------------------------------------------------
/** KnowledgeModel: the row with its grants (no `data`, as 0.10.2's model). */
function knowledgeModel(k: KnowledgeRow, grants: AccessGrantRow[]) {
  return { id: k.id, user_id: k.user_id, name: k.name, description: k.description, meta: k.meta, access_grants: grants, created_at: k.created_at, updated_at: k.updated_at };
}

async function loadKnowledge(db: Db, id: string): Promise<KnowledgeRow> {
  return (await getKnowledge(db, id)) ?? fail(404, OWUI_ERRORS.notFound);
}

/** KnowledgeFilesResponse: the base, its grants, its files and whether the caller may change it. */
async function filesResponse(db: Db, id: string, writeAccess: boolean, extra: Record<string, unknown> = {}) {
  const k = await loadKnowledge(db, id);
  return { ...knowledgeModel(k, await knowledgeGrants(db, id)), files: await fileMetadatas(db, id), write_access: writeAccess, ...extra };
}

function directoryModel(d: DirectoryRow) {
  return { id: d.id, knowledge_id: d.knowledge_id, parent_id: d.parent_id, name: d.name, user_id: d.user_id, created_at: d.created_at, updated_at: d.updated_at };
}

// ---- grants --------------------------------------------------------------------------------
/** One row per (principal, permission); unknown users or groups are the caller's 400. */
async function cleanGrants(tx: Tx, grants: readonly Grant[]): Promise<Grant[]> {
  if (grants.some((g) => g.principal_type === 'group' && g.principal_id === '*')) fail(400, 'The everyone grant is principal_type "user" with principal_id "*"');
  const seen = new Set<string>();
  const out = grants.filter((g) => {
    const k = `${g.principal_type}\u0001${g.principal_id}\u0001${g.permission}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  for (const table of ['user', 'group'] as const) {
    const ids = [...new Set(out.filter((g) => g.principal_type === table && g.principal_id !== '*').map((g) => g.principal_id))];
    if (!ids.length) continue;
    const known = await existingIds(tx, table, ids);
    const unknown = ids.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown ${table} in access_grants: ${unknown}`);
  }
  return out;
}

/** Users a set of grants reaches (members of granted groups included; `*` kept as is), sorted. */
async function grantees(tx: Tx, grants: readonly { principal_type: string; principal_id: string }[]): Promise<string[]> {
  const ids = new Set(grants.filter((g) => g.principal_type === 'user').map((g) => g.principal_id));
  const groups = [...new Set(grants.filter((g) => g.principal_type === 'group').map((g) => g.principal_id))];
  if (groups.length) for (const id of await groupMemberIds(tx, groups)) ids.add(id);
  return [...ids].sort();
}

/** Set the grants and write knowledge.access_updated naming everyone who gained or lost access. */
async function setGrants(ctx: OpContext, tx: Tx, user: UserRow, id: string, grants: readonly Grant[]): Promise<void> {
  const cleaned = await cleanGrants(tx, grants);
  const before = await knowledgeGrants(tx, id);
  await replaceGrants(tx, id, cleaned, now());
  const after = await knowledgeGrants(tx, id);
  await ctx.emit(tx, 'knowledge.access_updated', {
    actor: user,
    subject: { type: 'knowledge', id },
    data: { grant_count: after.length, user_ids: await grantees(tx, [...before, ...after]) },
  });
}

// ---- lists ---------------------------------------------------------------------------------
/** GET / and /search: bases the caller may read, 30 a page, newest change first. */
async function listBases(ctx: OpContext, user: UserRow, q: Record<string, string>, search: boolean) {
  const sql = ctx.sql;
  const page = Math.max(queryInt(q, 'page', Number.MIN_SAFE_INTEGER) ?? 1, 1);
  const filters = search ? { query: q.query, view: q.view_option, source: q.source, orderBy: q.order_by, direction: q.direction } : null;
  const { rows, total } = await basesPage(sql, user, filters, PAGE, (page - 1) * PAGE);
  const ids = rows.map((r) => r.id);
  const [grants, writable] = await Promise.all([grantsByKnowledge(sql, ids), writableAmong(sql, user, ids)]);
  return {
    items: rows.map((r) => ({ ...knowledgeModel(r, grants.get(r.id) ?? []), user: r.user, file_count: r.file_count, write_access: writable.has(r.id) })),
    total,
  };
}

/** GET /{id}/files: the base's files (FileUserResponse: the adder as `user`), with the directory level asked for. */
async function listFiles(ctx: OpContext, user: UserRow, k: KnowledgeRow, q: Record<string, string>) {
  const sql = ctx.sql;
  const page = Math.max(queryInt(q, 'page', Number.MIN_SAFE_INTEGER) ?? 1, 1);
  const askedLimit = queryInt(q, 'limit', Number.MIN_SAFE_INTEGER);
  // Open WebUI lets admins choose the page size; everyone else gets 30.
  const limit = user.role === 'admin' && askedLimit !== undefined ? Math.max(1, askedLimit) : PAGE;
  const includeContent = queryBool(q, 'include_content', false);
  // directory_id: absent = every file; "" = the root level; an id = that directory.
  const dirScoped = q.directory_id !== undefined;
  const dirId = q.directory_id ? q.directory_id : null;
  const filter = { directoryId: dirScoped ? dirId : undefined, query: q.query, includeContent, view: q.view_option, orderBy: q.order_by, direction: q.direction };
  const { items, total } = await knowledgeFilesPage(sql, user, k.id, filter, limit, (page - 1) * limit);
  return {
    items: [...items],
    directories: (await childDirectories(sql, k.id, dirId)).map(directoryModel),
    breadcrumbs: (await breadcrumbs(sql, k.id, dirId)).map(directoryModel),
    total,
  };
}

// ---- files ---------------------------------------------------------------------------------
/** Whether the caller may read a file: theirs, an admin, or linked into a base they may read. */
async function mayReadFile(db: Db, user: UserRow, f: FileRow): Promise<boolean> {
  if (f.user_id === user.id || user.role === 'admin') return true;
  return inReadableBase(db, user, f.id);
}

async function checkTargetDir(db: Db, knowledgeId: string, dirId: string | null | undefined): Promise<string | null> {
  if (!dirId) return null;
  if (!(await getDirectory(db, knowledgeId, dirId))) fail(404, TARGET_DIR_NOT_FOUND);
  return dirId;
}

/**
 * Take a file out of a base; with `deleteFile` (Open WebUI's default) the file itself goes too
 * when the caller owns it or is an admin — its chunks and its links to other bases with it.
 * A deleted file's stored bytes are pushed onto `deleted`, for dropBlobs once the transaction has
 * committed (dropped inside it, a later rollback would leave rows without their bytes).
 */
async function unlink(ctx: OpContext, tx: Tx, user: UserRow, knowledgeId: string, f: FileRow, dirId: string | null, deleteFile: boolean, deleted: FileRow[]): Promise<void> {
  await deleteLink(tx, knowledgeId, f.id);
  await ctx.emit(tx, 'knowledge.file.removed', {
    actor: user,
    subject: { type: 'file', id: f.id },
    data: { knowledge_id: knowledgeId, file_id: f.id, directory_id: dirId, filename: f.filename },
  });
  if (!deleteFile || (f.user_id !== user.id && user.role !== 'admin')) return;
  await deleteFileRow(tx, f.id);
  await ctx.emit(tx, 'file.deleted', { actor: user, subject: { type: 'file', id: f.id }, data: { filename: f.filename } });
  deleted.push(f);
}

/** The stored bytes of deleted files go once no file row shares them (content-addressed store). */
async function dropBlobs(ctx: OpContext, deleted: readonly FileRow[]): Promise<void> {
  for (const f of deleted) await ctx.sql.begin((tx) => dropUnusedBlob(ctx, tx, f.hash, f.path));
}

// ---- handlers ------------------------------------------------------------------------------
export const knowledgeOps = opTable({
  'knowledge.list': async (req, ctx) => ok(await listBases(ctx, me(ctx), stripNul(req.query), false)),

  'knowledge.search': async (req, ctx) => ok(await listBases(ctx, me(ctx), stripNul(req.query), true)),

  'knowledge.searchFiles': async (req, ctx) => {
    const user = me(ctx);
    const sql = ctx.sql;
    const q = stripNul(req.query);
    const page = Math.max(queryInt(q, 'page', Number.MIN_SAFE_INTEGER) ?? 1, 1);
    const includeContent = queryBool(q, 'include_content', false);
    const { rows, total } = await searchFilesPage(sql, user, { query: q.query, includeContent }, PAGE, (page - 1) * PAGE);
    const grants = await grantsByKnowledge(sql, [...new Set(rows.map((r) => r.knowledge.id))]);
    return ok({
      items: rows.map(({ knowledge, ...f }) => ({ ...f, collection: knowledgeModel(knowledge, grants.get(knowledge.id) ?? []) })),
      directories: [],
      breadcrumbs: [],
      total,
    });
  },

  'knowledge.create': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const id = randomUUID();
    const t = now();
    const k = await kbWrite(ctx, async (tx) => {
      await insertKnowledge(tx, { id, userId: user.id, name: form.name, description: form.description }, t);
      await ctx.emit(tx, 'knowledge.created', { actor: user, subject: { type: 'knowledge', id }, data: { name: form.name, description: form.description } });
      if (form.access_grants?.length) await setGrants(ctx, tx, user, id, form.access_grants);
      return knowledgeModel(await loadKnowledge(tx, id), await knowledgeGrants(tx, id));
    });
    return ok({ ...k, files: null });
  },

  'knowledge.reindex': async (_req, ctx) => {
    const user = me(ctx);
    if (user.role !== 'admin') fail(401, UNAUTHORIZED);
    const fileIds = await linkedFileIds(ctx.sql);
    // Queued before the event commits: a reindex event always means the work is queued.
    await ctx.ingest.enqueue(fileIds);
    await ctx.sql.begin((tx) =>
      ctx.emit(tx, 'knowledge.reindexed', { actor: user, subject: { type: 'knowledge', id: 'all' }, data: { file_count: fileIds.length } }),
    );
    return ok(true);
  },

  'knowledge.get': async (req, ctx) => {
    const user = me(ctx);
    const { knowledge, access } = await readableKnowledge(ctx.sql, user, param(req, 'id'));
    return ok(await filesResponse(ctx.sql, knowledge.id, access !== 'read'));
  },

  'knowledge.update': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const body = await kbWrite(ctx, async (tx) => {
      await updateKnowledge(tx, knowledge.id, { name: form.name, description: form.description }, now());
      await ctx.emit(tx, 'knowledge.updated', { actor: user, subject: { type: 'knowledge', id: knowledge.id }, data: { name: form.name, description: form.description } });
      // access_grants left out (or null) keeps the grants; a list replaces them.
      if (form.access_grants != null) await setGrants(ctx, tx, user, knowledge.id, form.access_grants);
      return filesResponse(tx, knowledge.id, true);
    });
    return ok(body);
  },

  'knowledge.updateAccess': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const body = await kbWrite(ctx, async (tx) => {
      await lockKnowledge(tx, knowledge.id);
      await setGrants(ctx, tx, user, knowledge.id, form.access_grants);
      return filesResponse(tx, knowledge.id, true);
    });
    return ok(body);
  },

  'knowledge.files': async (req, ctx) => {
    const user = me(ctx);
    const { knowledge } = await readableKnowledge(ctx.sql, user, param(req, 'id'));
    return ok(await listFiles(ctx, user, knowledge, stripNul(req.query)));
  },

  'knowledge.pendingFiles': async (req, ctx) => {
    const user = me(ctx);
    const { knowledge } = await readableKnowledge(ctx.sql, user, param(req, 'id'));
    return ok([...(await pendingFiles(ctx.sql, user, knowledge.id))]);
  },

  'knowledge.addFile': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const file = (await getFile(ctx.sql, form.file_id)) ?? fail(400, OWUI_ERRORS.notFound);
    // Write access to the base is not enough: the caller must be able to read the file too.
    if (!(await mayReadFile(ctx.sql, user, file))) fail(403, OWUI_ERRORS.accessProhibited);
    // A file being processed may be linked (its chunks arrive when it completes); one that never
    // was, or failed, has nothing to search.
    if (file.status !== 'completed' && file.status !== 'pending') fail(400, FILE_NOT_PROCESSED);
    const body = await kbWrite(ctx, async (tx) => {
      const dirId = await checkTargetDir(tx, knowledge.id, form.directory_id);
      await linkFile(tx, ctx.emit, user, { knowledgeId: knowledge.id, fileId: file.id, filename: file.filename, directoryId: dirId }, now());
      return filesResponse(tx, knowledge.id, true);
    });
    return ok(body);
  },

  'knowledge.batchAddFiles': async (req, ctx) => {
    const user = me(ctx);
    const forms = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const ids = [...new Set(forms.map((f) => f.file_id))];
    const files = await filesByIds(ctx.sql, ids);
    const missing = ids.find((id) => !files.has(id));
    if (missing !== undefined) fail(400, `File ${missing} not found`);
    for (const f of files.values()) if (!(await mayReadFile(ctx.sql, user, f))) fail(403, OWUI_ERRORS.accessProhibited);
    const errors: string[] = [];
    const body = await kbWrite(ctx, async (tx) => {
      const t = now();
      for (const form of forms) {
        const file = files.get(form.file_id)!;
        if (file.status !== 'completed' && file.status !== 'pending') {
          errors.push(`${file.id}: ${FILE_NOT_PROCESSED}`);
          continue;
        }
        const dirId = await checkTargetDir(tx, knowledge.id, form.directory_id);
        await linkFile(tx, ctx.emit, user, { knowledgeId: knowledge.id, fileId: file.id, filename: file.filename, directoryId: dirId }, t);
      }
      return filesResponse(tx, knowledge.id, true, errors.length ? { warnings: { message: 'Some files failed to process', errors } } : {});
    });
    return ok(body);
  },

  'knowledge.updateFile': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const file = (await getFile(ctx.sql, form.file_id)) ?? fail(400, OWUI_ERRORS.notFound);
    const at = (await linked(ctx.sql, knowledge.id, file.id)) ?? fail(400, OWUI_ERRORS.notFound);
    // Open WebUI re-extracts and re-embeds the file here; ours goes back through the ingest queue.
    await ctx.ingest.enqueue([file.id]);
    const body = await kbWrite(ctx, async (tx) => {
      await ctx.emit(tx, 'knowledge.file.updated', {
        actor: user,
        subject: { type: 'file', id: file.id },
        data: { knowledge_id: knowledge.id, file_id: file.id, directory_id: at.directory_id, filename: file.filename },
      });
      return filesResponse(tx, knowledge.id, true);
    });
    return ok(body);
  },

  'knowledge.removeFile': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const deleteFile = queryBool(req.query, 'delete_file', true);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const file = (await getFile(ctx.sql, form.file_id)) ?? fail(400, OWUI_ERRORS.notFound);
    const at = (await linked(ctx.sql, knowledge.id, file.id)) ?? fail(400, OWUI_ERRORS.notFound);
    const deleted: FileRow[] = [];
    const body = await kbWrite(ctx, async (tx) => {
      await unlink(ctx, tx, user, knowledge.id, file, at.directory_id, deleteFile, deleted);
      return filesResponse(tx, knowledge.id, true);
    });
    await dropBlobs(ctx, deleted);
    return ok(body);
  },

  'knowledge.moveFile': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'), 403);
    if (!(await linked(ctx.sql, knowledge.id, form.file_id))) fail(404, OWUI_ERRORS.notFound);
    await kbWrite(ctx, async (tx) => {
      const dirId = await checkTargetDir(tx, knowledge.id, form.directory_id);
      const filename = (await moveLink(tx, knowledge.id, form.file_id, dirId, now())) ?? fail(404, OWUI_ERRORS.notFound);
      await ctx.emit(tx, 'knowledge.file.moved', {
        actor: user,
        subject: { type: 'file', id: form.file_id },
        data: { knowledge_id: knowledge.id, file_id: form.file_id, directory_id: dirId, filename },
      });
    });
    return ok({ status: true });
  },

  'knowledge.delete': async (req, ctx) => {
    const user = me(ctx);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    await ctx.sql.begin(async (tx) => {
      // Files stay (they may be in other bases or chats); their links, directories and grants go.
      await deleteKnowledge(tx, knowledge.id);
      await ctx.emit(tx, 'knowledge.deleted', { actor: user, subject: { type: 'knowledge', id: knowledge.id }, data: { name: knowledge.name } });
    });
    return ok(true);
  },

  'knowledge.reset': async (req, ctx) => {
    const user = me(ctx);
    const includeDirectories = queryBool(req.query, 'include_directories', true);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'));
    const k = await kbWrite(ctx, async (tx) => {
      const fileCount = await resetKnowledge(tx, knowledge.id, includeDirectories, now());
      await ctx.emit(tx, 'knowledge.reset', { actor: user, subject: { type: 'knowledge', id: knowledge.id }, data: { file_count: fileCount } });
      return knowledgeModel(await loadKnowledge(tx, knowledge.id), await knowledgeGrants(tx, knowledge.id));
    });
    return ok({ ...k, files: null });
  },

  'knowledge.export': async (req, ctx) => {
    const user = me(ctx);
    const { knowledge } = await readableKnowledge(ctx.sql, user, param(req, 'id'));
    const entries = await exportEntries(ctx.sql, knowledge.id);
    return replyWithBytes(ctx.blobs.bus, knowledgeZip(ctx.sql, entries), {
      contentType: 'application/zip',
      disposition: contentDisposition('attachment', exportFileName(knowledge.name)),
    });
  },

  'knowledge.syncDiff': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'), 403);
    return ok(await syncDiff(ctx.sql, knowledge.id, form.manifest));
  },

  'knowledge.syncCleanup': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'), 403);
    const deleted: FileRow[] = [];
    await kbWrite(ctx, async (tx) => {
      await lockKnowledge(tx, knowledge.id);
      for (const fileId of new Set(form.file_ids)) {
        const file = await getFile(tx, fileId);
        const at = file && (await linked(tx, knowledge.id, fileId));
        // Only files of this base are cleaned up; anything else named here is skipped, as Open WebUI.
        if (!file || !at) continue;
        await unlink(ctx, tx, user, knowledge.id, file, at.directory_id, true, deleted);
      }
      // Children before parents (the diff lists parents first).
      const t = now();
      for (const dirId of [...form.dir_ids].reverse()) {
        const dir = await getDirectory(tx, knowledge.id, dirId);
        if (!dir) continue;
        await deleteDirectory(tx, dir, false, t);
        await ctx.emit(tx, 'knowledge.directory.deleted', {
          actor: user,
          subject: { type: 'directory', id: dir.id },
          data: { knowledge_id: knowledge.id, name: dir.name, parent_id: dir.parent_id },
        });
      }
    });
    await dropBlobs(ctx, deleted);
    return ok({ status: true });
  },

  'knowledge.dirs.create': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'), 403);
    const name = checkDirName(form.name);
    const dir = await kbWrite(ctx, async (tx) => {
      const parentId = await checkTargetDir(tx, knowledge.id, form.parent_id);
      const d = await insertDirectory(tx, { knowledgeId: knowledge.id, parentId, name, userId: user.id }, now());
      await ctx.emit(tx, 'knowledge.directory.created', {
        actor: user,
        subject: { type: 'directory', id: d.id },
        data: { knowledge_id: knowledge.id, name: d.name, parent_id: d.parent_id },
      });
      return d;
    });
    return ok(directoryModel(dir));
  },

  'knowledge.dirs.update': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'), 403);
    const moving = typeof req.body === 'object' && req.body !== null && 'parent_id' in req.body;
    const name = form.name != null ? checkDirName(form.name) : undefined;
    const dir = await kbWrite(
      ctx,
      async (tx) => {
        // One move at a time per base: two crossing moves could each pass the cycle check.
        await lockKnowledge(tx, knowledge.id);
        const before = (await getDirectory(tx, knowledge.id, param(req, 'dir_id'))) ?? fail(404, OWUI_ERRORS.notFound);
        const d = await updateDirectory(tx, before, { ...(name !== undefined ? { name } : {}), ...(moving ? { parentId: form.parent_id ?? null } : {}) }, now());
        await ctx.emit(tx, 'knowledge.directory.updated', {
          actor: user,
          subject: { type: 'directory', id: d.id },
          data: { knowledge_id: knowledge.id, name: d.name, parent_id: d.parent_id },
        });
        return d;
      },
      DIR_UPDATE_FAILED,
    );
    return ok(directoryModel(dir));
  },

  'knowledge.dirs.delete': async (req, ctx) => {
    const user = me(ctx);
    const moveFiles = queryBool(req.query, 'move_files', true);
    const { knowledge } = await writableKnowledge(ctx.sql, user, param(req, 'id'), 403);
    await kbWrite(ctx, async (tx) => {
      const dir = (await getDirectory(tx, knowledge.id, param(req, 'dir_id'))) ?? fail(404, OWUI_ERRORS.notFound);
      const removed = await deleteDirectory(tx, dir, moveFiles, now());
      for (const fileId of removed) {
        await ctx.emit(tx, 'knowledge.file.removed', { actor: user, subject: { type: 'file', id: fileId }, data: { knowledge_id: knowledge.id, file_id: fileId, directory_id: null } });
      }
      await ctx.emit(tx, 'knowledge.directory.deleted', {
        actor: user,
        subject: { type: 'directory', id: dir.id },
        data: { knowledge_id: knowledge.id, name: dir.name, parent_id: dir.parent_id },
      });
    });
    return ok({ status: true });
  },
});
