import type { z } from 'zod';
import {
  type MemoryBatchUpdateForm,
  OWUI_ERRORS,
} from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type Tx, type UserRow } from '../context.ts';
import { asSql } from '../auth/accounts.ops.ts';
import {
  cleanMemoryContent,
  cleanMemoryPath,
  contentPreview,
  listMemoryPathGroups,
  memoryVectorText,
  normalizeMemoryType,
  readMemoryPathRows,
  searchMemoryRows,
  type MemoryRow,
} from './rules.ts';
import {
  deleteMemory,
  deleteUserMemories,
  duplicateMemory,
  hasMemories,
  insertMemory,
  nearestMemories,
  reembedMemories,
  updateMemory,
  userMemories,
  userMemory,
} from './memories.store.ts';

/**
 * `/api/v1/memories/*` (Open WebUI 0.10's routers/memories.py). Memories are per user: every
 * statement is scoped by the caller's id, and another user's memory id answers like an unknown id.
 * Open WebUI keeps the vectors in a separate collection per user; here the embedding is a column of
 * the row, so a change and its vector commit together (and its event, through the outbox).
 */

/** Memories switched off by the admin: every route 404s, as in Open WebUI. */
async function memoriesUser(ctx: OpContext): Promise<UserRow> {
  const user = me(ctx);
  if (!(await ctx.settings()).ENABLE_MEMORIES) fail(404, OWUI_ERRORS.notFound);
  return user;
}

const eventData = (m: Pick<MemoryRow, 'content' | 'type' | 'path'> | null, extra: { operation?: Operation['action'] } = {}) => ({
  content_preview: contentPreview(m?.content),
  type: m?.type ?? null,
  path: m?.path ?? null,
  ...extra,
});

type Operation = {
  action: 'add' | 'replace' | 'remove' | 'move';
  id: string | null;
  content: string | null;
  type: 'user' | 'context' | null;
  path: string | null;
  meta?: Record<string, unknown>;
};

/** Open WebUI's validate_memory_operations: the whole batch is checked before anything is applied. */
function validateOperations(form: z.infer<typeof MemoryBatchUpdateForm>): Operation[] {
  if (!form.operations.length) fail(400, 'No memory operations provided');
  return form.operations.map((o) => {
    const op: Operation = { action: o.action, id: o.id ?? null, content: o.content ?? null, type: o.type ?? null, path: o.path ?? null };
    if (op.action === 'add') {
      op.content = cleanMemoryContent(op.content);
      op.type = normalizeMemoryType(op.type);
      op.path = cleanMemoryPath(op.path);
    } else if (op.action === 'replace') {
      if (!op.id) fail(400, 'Memory id is required for replace');
      op.content = cleanMemoryContent(op.content);
      if (op.type !== null) op.type = normalizeMemoryType(op.type);
      op.path = cleanMemoryPath(op.path);
    } else if (op.action === 'move') {
      if (!op.id) fail(400, 'Memory id is required for move');
      op.path = cleanMemoryPath(op.path);
    } else if (!op.id) {
      fail(400, 'Memory id is required for remove');
    }
    return op;
  });
}

type BatchResult =
  | { action: Operation['action']; status: 'created' | 'updated'; memory: MemoryRow }
  | { action: Operation['action']; status: 'skipped'; memory: MemoryRow; reason: 'duplicate' }
  | { action: Operation['action']; status: 'deleted'; id: string };

/** Apply a validated batch inside `tx`; an unknown id aborts it (404, and the transaction rolls back). */
async function applyOperations(tx: Tx, userId: string, ops: Operation[]): Promise<BatchResult[]> {
  const db = asSql(tx);
  const t = now();
  const results: BatchResult[] = [];
  const mine = async (id: string) => {
    const row = await userMemory(db, userId, id, true);
    if (!row) fail(404, `Memory not found: ${id}`);
    return row;
  };
  for (const op of ops) {
    if (op.action === 'add') {
      const m = { type: op.type!, path: op.path, content: op.content! };
      const dup = await duplicateMemory(db, userId, m);
      if (dup) {
        results.push({ action: op.action, status: 'skipped', memory: dup, reason: 'duplicate' });
        continue;
      }
      results.push({ action: op.action, status: 'created', memory: await insertMemory(db, userId, { ...m, meta: op.meta }, t) });
    } else if (op.action === 'replace') {
      const cur = await mine(op.id!);
      const row = await updateMemory(db, userId, cur.id, { content: op.content!, type: op.type ?? cur.type, path: op.path }, op.meta, t);
      results.push({ action: op.action, status: 'updated', memory: row! });
    } else if (op.action === 'move') {
      const cur = await mine(op.id!);
      const row = await updateMemory(db, userId, cur.id, { content: cur.content, type: cur.type, path: op.path }, op.meta, t);
      results.push({ action: op.action, status: 'updated', memory: row! });
    } else {
      const cur = await mine(op.id!);
      await deleteMemory(db, userId, cur.id);
      results.push({ action: op.action, status: 'deleted', id: cur.id });
    }
  }
  return results;
}

export const memoriesOps = opTable({
  'memories.list': async (_req, ctx) => {
    const user = await memoriesUser(ctx);
    return ok(await userMemories(ctx.sql, user.id));
  },

  'memories.add': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    const content = cleanMemoryContent(form.content);
    const path = cleanMemoryPath(form.path);
    const type = normalizeMemoryType(form.type);
    const t = now();
    const memory = await ctx.sql.begin(async (tx) => {
      const row = await insertMemory(asSql(tx), user.id, { type, path, content, meta: { created_by: 'manual' } }, t);
      await ctx.emit(tx, 'memory.created', { actor: user, subject: { type: 'memory', id: row.id }, data: eventData(row) });
      return row;
    });
    return ok(memory);
  },

  'memories.batchUpdate': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    const ops = validateOperations(form);
    // A REST call carries no chat metadata: Open WebUI records the source and nulls for the rest.
    const meta = { created_by: form.source ?? 'tool', chat_id: null, message_id: null, model: null };
    for (const op of ops) if (op.action !== 'remove') op.meta = meta;
    const results = await ctx.sql.begin(async (tx) => {
      const out = await applyOperations(tx, user.id, ops);
      for (const r of out) {
        if (r.status === 'skipped') continue;
        const event = r.status === 'created' ? 'memory.created' : r.status === 'updated' ? 'memory.updated' : 'memory.deleted';
        const memory = 'memory' in r ? r.memory : null;
        await ctx.emit(tx, event, {
          actor: user,
          subject: { type: 'memory', id: memory?.id ?? ('id' in r ? r.id : null) },
          data: eventData(memory, { operation: r.action }),
        });
      }
      return out;
    });
    return ok(results);
  },

  'memories.query': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    if (!(await hasMemories(ctx.sql, user.id))) fail(404, 'No memories found for user');
    // k: Open WebUI takes any int (null = every memory); kept to 1..1000 so no input can fail the query.
    const hits = await nearestMemories(ctx.sql, user.id, form.content, Math.max(1, Math.min(form.k ?? 1000, 1000)));
    // Open WebUI's SearchResult from its pgvector client: one inner list per query vector.
    return ok({
      ids: [hits.map((m) => m.id)],
      documents: [hits.map((m) => memoryVectorText(m.content, m.path))],
      metadatas: [hits.map((m) => ({ created_at: m.created_at, updated_at: m.updated_at, type: m.type, path: m.path }))],
      distances: [hits.map((m) => m.score)],
    });
  },

  'memories.search': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    const rows = await userMemories(ctx.sql, user.id);
    return ok(searchMemoryRows(rows, { query: form.query, path: form.path, memoryId: form.memory_id, type: form.type, limit: form.limit }));
  },

  'memories.paths': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    const rows = await userMemories(ctx.sql, user.id);
    return ok(listMemoryPathGroups(rows, { query: form.query, type: form.type, limit: form.limit }));
  },

  'memories.path': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    const rows = await userMemories(ctx.sql, user.id);
    return ok(readMemoryPathRows(rows, { path: form.path, type: form.type, includeChildren: form.include_children, limit: form.limit }));
  },

  'memories.reset': async (_req, ctx) => {
    const user = await memoriesUser(ctx);
    await ctx.sql.begin(async (tx) => {
      const count = await reembedMemories(asSql(tx), user.id);
      await ctx.emit(tx, 'memory.reset', { actor: user, subject: { type: 'user', id: user.id }, data: { count } });
    });
    return ok(true);
  },

  'memories.deleteAll': async (_req, ctx) => {
    const user = await memoriesUser(ctx);
    await ctx.sql.begin(async (tx) => {
      await deleteUserMemories(asSql(tx), user.id);
      await ctx.emit(tx, 'memory.deleted', { actor: user, subject: { type: 'user', id: user.id }, data: {} });
    });
    return ok(true);
  },

  'memories.update': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const form = req.body;
    const content = form.content != null ? cleanMemoryContent(form.content) : null;
    const path = cleanMemoryPath(form.path);
    if (content === null && form.type == null && form.path == null) fail(400, 'No memory update provided');
    const id = req.params.id ?? '';
    const memory = await ctx.sql.begin(async (tx) => {
      const cur = await userMemory(asSql(tx), user.id, id, true);
      if (!cur) fail(404, OWUI_ERRORS.notFound);
      const next = {
        content: content ?? cur.content,
        type: form.type != null ? normalizeMemoryType(form.type) : cur.type,
        // A path given as "" or "/" clears it; an absent one leaves it.
        path: form.path != null ? path : cur.path,
      };
      const row = (await updateMemory(asSql(tx), user.id, cur.id, next, { created_by: 'manual' }, now()))!;
      await ctx.emit(tx, 'memory.updated', { actor: user, subject: { type: 'memory', id: row.id }, data: eventData(row) });
      return row;
    });
    return ok(memory);
  },

  'memories.delete': async (req, ctx) => {
    const user = await memoriesUser(ctx);
    const id = req.params.id ?? '';
    await ctx.sql.begin(async (tx) => {
      // Open WebUI answers `false` here; we answer 404 like every other unknown id (a stranger's included).
      if (!(await deleteMemory(asSql(tx), user.id, id))) fail(404, OWUI_ERRORS.notFound);
      await ctx.emit(tx, 'memory.deleted', { actor: user, subject: { type: 'memory', id }, data: {} });
    });
    return ok(true);
  },
});
