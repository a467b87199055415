import { randomUUID } from 'node:crypto';
import {
  OWUI_ERRORS,
} from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type Tx } from '../context.ts';
import type { Embedder } from '../retrieval/embedder.ts';
import { embedderFor } from '../retrieval/rag.ts';
import { knowledgeGrants } from './access.ts';
import {
  connectionUses,
  externalMeta,
  ExternalSourceError,
  externalOf,
  getConnection,
  listConnections,
  newConnection,
  retrieveExternal,
  sanitizeConnection,
  saveConnection,
  updatedConnection,
  validSource,
  type ExternalConnection,
  type ExternalSource,
} from './external.ts';

/**
 * `/api/v1/knowledge/external/*` (Open WebUI 0.10's routers/knowledge.py, admin only): the
 * connections to outside retrieval services, test queries against them, and knowledge bases
 * answered by one of their collections (knowledge/external.ts has the data model and the
 * providers). Differences from Open WebUI, each on purpose:
 * - a test or a source that cannot be reached is a 400 naming why (Open WebUI lets the
 *   exception through as a 500);
 * - `POST …/connections/{id}/test` really asks the source (an empty query result is fine) instead
 *   of only checking that the connection is enabled and has an endpoint;
 * - connections are rows of their own table, not one config value rewritten on each change.
 */

type Ctx = OpContext;

async function knownConnection(ctx: Ctx, id: string, lock = false): Promise<ExternalConnection> {
  const c = await getConnection(ctx.sql, id, lock);
  if (!c) fail(404, OWUI_ERRORS.notFound);
  return c;
}

/** One test query (Open WebUI's _test_external_source_definition), failures as the client's 400. */
async function testQuery(embedder: Embedder, connection: ExternalConnection, source: ExternalSource, name: string, query: string, count: number) {
  if (!query.trim()) fail(400, 'Test query is required.');
  try {
    return await retrieveExternal({ ...connection, enabled: true }, { id: 'external-test', name, source }, query.trim(), count, embedder);
  } catch (err) {
    if (err instanceof ExternalSourceError) fail(400, `External knowledge source test failed: ${err.message}.`);
    throw err;
  }
}

interface Grant {
  principal_type: 'user' | 'group';
  principal_id: string;
  permission: 'read' | 'write';
}

/** Replace the knowledge base's grants (one row per principal and permission); unknown principals are a 400. */
async function setGrants(tx: Tx, id: string, grants: readonly Grant[] | null | undefined, t: number): Promise<void> {
  const unique = [...new Map((grants ?? []).map((g) => [`${g.principal_type}\u0001${g.principal_id}\u0001${g.permission}`, g])).values()];
  for (const g of unique) {
    if (g.principal_id === '*') {
      if (g.principal_type !== 'user') fail(400, 'The everyone grant is principal_type "user" with principal_id "*"');
      continue;
    }
    const [known] = g.principal_type === 'user' ? await tx`select 1 from "user" where id = ${g.principal_id}` : await tx`select 1 from "group" where id = ${g.principal_id}`;
    if (!known) fail(400, `Unknown ${g.principal_type} in access_grants: ${g.principal_id}`);
  }
  await tx`delete from access_grant where resource_type = 'knowledge' and resource_id = ${id}`;
  for (const g of unique) {
    await tx`insert into access_grant (id, resource_type, resource_id, principal_type, principal_id, permission, created_at)
      values (${randomUUID()}, 'knowledge', ${id}, ${g.principal_type}, ${g.principal_id}, ${g.permission}, ${t})`;
  }
}

/** KnowledgeResponse of a knowledge row, with its grants. */
async function knowledgeResponse(tx: Tx, id: string) {
  const [k] = await tx<{ id: string; user_id: string; name: string; description: string; meta: Record<string, unknown> | null; data: Record<string, unknown> | null; created_at: number; updated_at: number }[]>`
    select id, user_id, name, description, meta, data, created_at, updated_at from knowledge where id = ${id}`;
  if (!k) fail(404, OWUI_ERRORS.notFound);
  return { ...k, access_grants: await knowledgeGrants(tx, id) };
}

/** A new knowledge row reading `source` through `connection`, with its grants (KnowledgeResponse). */
async function insertExternalKnowledge(tx: Tx, userId: string, form: { name: string; description: string; access_grants?: readonly Grant[] | null }, connection: ExternalConnection, source: ExternalSource) {
  const t = now();
  const id = randomUUID();
  await tx`insert into knowledge (id, user_id, name, description, meta, data, created_at, updated_at)
    values (${id}, ${userId}, ${form.name.trim()}, ${form.description}, ${tx.json(externalMeta(connection, source) as never)}, null, ${t}, ${t})`;
  await setGrants(tx, id, form.access_grants, t);
  return knowledgeResponse(tx, id);
}

const embedder = async (ctx: Ctx): Promise<Embedder> => embedderFor(await ctx.settings());

export const knowledgeExternalOps = opTable({
  'knowledge.external.connections.list': async (_req, ctx) => {
    const items = (await listConnections(ctx.sql)).map(sanitizeConnection);
    return ok({ items, total: items.length });
  },

  'knowledge.external.connections.create': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    const c = newConnection(form, user.id, now());
    await ctx.sql.begin(async (tx) => {
      await saveConnection(tx, c);
      await ctx.emit(tx, 'knowledge.external_connection.created', { actor: user, subject: { type: 'knowledge', id: c.id }, data: { name: c.name, provider: c.provider } });
    });
    return ok(sanitizeConnection(c));
  },

  'knowledge.external.connections.get': async (req, ctx) => ok(sanitizeConnection(await knownConnection(ctx, req.params.id ?? ''))),

  'knowledge.external.connections.update': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    const c = await ctx.sql.begin(async (tx) => {
      const existing = (await getConnection(tx, req.params.id ?? '', true)) ?? fail(404, OWUI_ERRORS.notFound);
      const next = updatedConnection(form, existing, now());
      await saveConnection(tx, next);
      await ctx.emit(tx, 'knowledge.external_connection.updated', { actor: user, subject: { type: 'knowledge', id: next.id }, data: { name: next.name, provider: next.provider } });
      return next;
    });
    return ok(sanitizeConnection(c));
  },

  'knowledge.external.connections.delete': async (req, ctx) => {
    const user = me(ctx);
    await ctx.sql.begin(async (tx) => {
      const c = (await getConnection(tx, req.params.id ?? '', true)) ?? fail(404, OWUI_ERRORS.notFound);
      if ((await connectionUses(tx, c.id)) > 0) fail(400, 'External connection is still used by knowledge bases.');
      await tx`delete from knowledge_external_connection where id = ${c.id}`;
      await ctx.emit(tx, 'knowledge.external_connection.deleted', { actor: user, subject: { type: 'knowledge', id: c.id }, data: { name: c.name, provider: c.provider } });
    });
    return ok(true);
  },

  'knowledge.external.connections.test': async (req, ctx) => {
    const c = await knownConnection(ctx, req.params.id ?? '');
    let error: string | undefined;
    if (!c.enabled) error = 'the connection is disabled';
    else {
      // A query nobody indexed: reaching the service and reading its answer is the test.
      try {
        await retrieveExternal(c, { id: 'external-test', name: c.name, source: { type: 'collection', name: 'gatehouse-connection-test', config: {} } }, 'connection test', 1, await embedder(ctx));
      } catch (err) {
        // Qdrant answers 404 for a collection it does not have: the service itself answered.
        if (!(err instanceof ExternalSourceError)) throw err;
        if (!/HTTP 404/.test(err.message)) error = err.message;
      }
    }
    const health = { ok: !error, provider: c.provider, checked_at: now(), ...(error ? { error } : {}) };
    await ctx.sql`update knowledge_external_connection set health = ${ctx.sql.json(health as never)}, updated_at = ${now()} where id = ${c.id}`;
    return ok(health);
  },

  'knowledge.external.connections.retrieveTest': async (req, ctx) => {
    const c = await knownConnection(ctx, req.params.id ?? '');
    const form = req.body;
    const source = validSource(form.source ?? { name: 'test', config: { content_field: 'payload.text' } }, c.provider);
    return ok(await testQuery(await embedder(ctx), c, source, c.name, form.query, form.count));
  },

  'knowledge.external.source.test': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    const connection = form.connection_id
      ? updatedConnection(form.connection, await getConnection(ctx.sql, form.connection_id).then((c) => c ?? fail(404, 'External connection not found.')), now())
      : newConnection(form.connection, user.id, now(), 'external-test');
    const source = validSource(form.source, connection.provider);
    return ok(await testQuery(await embedder(ctx), connection, source, connection.name, form.query, form.count));
  },

  'knowledge.external.knowledge.create': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    const connection = await knownConnection(ctx, form.connection_id);
    if (!form.name.trim()) fail(400, 'Knowledge name is required.');
    const source = validSource(form.source, connection.provider);
    const kb = await ctx.sql.begin((tx) => insertExternalKnowledge(tx, user.id, form, connection, source));
    return ok(kb);
  },

  'knowledge.external.source.create': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    if (!form.name.trim()) fail(400, 'Knowledge name is required.');
    const connection = newConnection(form.connection, user.id, now());
    const source = validSource(form.source, connection.provider);
    const test = await testQuery(await embedder(ctx), connection, source, connection.name, form.test_query, form.test_count);
    if (!test.documents.length) fail(400, 'Test query returned no results.');
    // The connection and the knowledge base together, or neither.
    const kb = await ctx.sql.begin(async (tx) => {
      await saveConnection(tx, connection);
      return insertExternalKnowledge(tx, user.id, form, connection, source);
    });
    return ok(kb);
  },

  'knowledge.external.source.update': async (req, ctx) => {
    const form = req.body;
    const id = req.params.id ?? '';
    const [row] = await ctx.sql<{ meta: Record<string, unknown> | null }[]>`select meta from knowledge where id = ${id}`;
    const ext = row ? externalOf(row.meta) : null;
    if (!ext) fail(404, OWUI_ERRORS.notFound);
    if (!form.name.trim()) fail(400, 'Knowledge name is required.');
    const existing = (await getConnection(ctx.sql, ext.connectionId)) ?? fail(404, 'External connection not found.');
    const connection = updatedConnection(form.connection, existing, now());
    const source = validSource(form.source, connection.provider);
    const test = await testQuery(await embedder(ctx), connection, source, connection.name, form.test_query, form.test_count);
    if (!test.documents.length) fail(400, 'Test query returned no results.');
    // Connection, name, source and grants change together, or not at all.
    const kb = await ctx.sql.begin(async (tx) => {
      await saveConnection(tx, connection);
      await tx`update knowledge set name = ${form.name.trim()}, description = ${form.description},
        meta = ${tx.json(externalMeta(connection, source) as never)}, updated_at = ${now()} where id = ${id}`;
      await setGrants(tx, id, form.access_grants, now());
      return knowledgeResponse(tx, id);
    });
    return ok(kb);
  },
});
