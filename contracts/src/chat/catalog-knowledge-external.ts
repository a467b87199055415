import { z } from 'zod';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';
import { AccessGrantForm } from './forms.ts';

/**
 * External knowledge bases (Open WebUI 0.10's `/api/v1/knowledge/external/*`, admin only):
 * connections to outside retrieval services (Qdrant, or our generic HTTP retrieval endpoint), test
 * queries, and knowledge bases answered by one collection of a connection. Forms and answers are
 * Open WebUI's (routers/knowledge.py ExternalKnowledge*Form); a connection's credentials
 * (`auth_config`) are written, never read back (`auth_configured` says whether some are set).
 * Spread into CHAT_CATALOG (catalog.ts); handlers in services/chat-worker/src/knowledge/external.ops.ts.
 */

const Obj = z.record(z.string(), z.unknown());

export const ExternalConnectionForm = z.object({
  name: z.string(),
  provider: z.string(),
  endpoint: z.string(),
  auth_config: Obj.nullish(),
  config: Obj.nullish(),
  capabilities: Obj.nullish(),
  enabled: z.boolean().default(true),
});

export const ExternalSourceForm = z.object({
  type: z.string().default('collection'),
  name: z.string(),
  config: Obj.nullish(),
});

const AccessGrants = z.array(AccessGrantForm).nullish();

export const ExternalKnowledgeCreateForm = z.object({
  name: z.string(),
  description: z.string().default(''),
  connection_id: z.string(),
  source: ExternalSourceForm,
  access_grants: AccessGrants,
});

export const ExternalSourceCreateForm = z.object({
  name: z.string(),
  description: z.string().default(''),
  connection: ExternalConnectionForm,
  source: ExternalSourceForm,
  access_grants: AccessGrants,
  test_query: z.string(),
  test_count: z.number().int().min(1).max(100).default(5),
});

/** `PATCH /external/source/{id}`: the knowledge base's name, grants, connection and source, tested again. */
export const ExternalSourceUpdateForm = ExternalSourceCreateForm;

export const ExternalSourceTestForm = z.object({
  connection_id: z.string().nullish(),
  connection: ExternalConnectionForm,
  source: ExternalSourceForm,
  query: z.string(),
  count: z.number().int().min(1).max(100).default(5),
});

export const ExternalRetrieveTestForm = z.object({
  query: z.string(),
  source: ExternalSourceForm.nullish(),
  count: z.number().int().min(1).max(100).default(5),
});

/** A connection as answered: Open WebUI's stored dict minus `auth_config`, plus `auth_configured`. */
export const ExternalConnection = z.object({
  id: z.string(),
  name: z.string(),
  provider: z.string(),
  endpoint: z.string(),
  config: Obj,
  capabilities: Obj,
  health: Obj.nullable(),
  enabled: z.boolean(),
  created_by: z.string(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  auth_configured: z.boolean(),
});
export const ExternalConnectionList = z.object({ items: z.array(ExternalConnection), total: z.number().int() });
export const ExternalHealth = z.object({ ok: z.boolean(), provider: z.string(), checked_at: z.number().int(), error: z.string().optional() });
/** One test query's hits (the first query's lists of Open WebUI's query result). */
export const ExternalRetrieval = z.object({ documents: z.array(z.string()), metadatas: z.array(Obj), distances: z.array(z.number()) });
/** KnowledgeResponse of an external knowledge base (meta.source = 'external'). */
export const ExternalKnowledge = z.object({
  id: z.string(),
  user_id: z.string(),
  name: z.string(),
  description: z.string(),
  meta: Obj.nullable(),
  data: Obj.nullable(),
  access_grants: z.array(Obj),
  created_at: z.number().int(),
  updated_at: z.number().int(),
});

const PATCH = (url: string) => ({ method: 'PATCH' as const, url });
const base = '/api/v1/knowledge/external';

export const KNOWLEDGE_EXTERNAL_OPS = catalog({
  'knowledge.external.connections.list': {
    subject: 'chat.knowledge.external.connections.list',
    routes: [GET(`${base}/connections`)],
    reply: ExternalConnectionList,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.connections.create': {
    subject: 'chat.knowledge.external.connections.create',
    routes: [POST(`${base}/connections`)],
    body: ExternalConnectionForm,
    reply: ExternalConnection,
    auth: 'admin',
    events: ['knowledge.external_connection.created'],
  },
  'knowledge.external.connections.get': {
    subject: 'chat.knowledge.external.connections.get',
    routes: [GET(`${base}/connections/:id`)],
    reply: ExternalConnection,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.connections.update': {
    subject: 'chat.knowledge.external.connections.update',
    routes: [PATCH(`${base}/connections/:id`)],
    body: ExternalConnectionForm,
    reply: ExternalConnection,
    auth: 'admin',
    events: ['knowledge.external_connection.updated'],
  },
  'knowledge.external.connections.delete': {
    subject: 'chat.knowledge.external.connections.delete',
    routes: [DELETE(`${base}/connections/:id`)],
    reply: z.literal(true),
    auth: 'admin',
    events: ['knowledge.external_connection.deleted'],
  },
  'knowledge.external.connections.test': {
    subject: 'chat.knowledge.external.connections.test',
    routes: [POST(`${base}/connections/:id/test`)],
    reply: ExternalHealth,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.connections.retrieveTest': {
    subject: 'chat.knowledge.external.connections.retrieveTest',
    routes: [POST(`${base}/connections/:id/retrieve-test`)],
    body: ExternalRetrieveTestForm,
    reply: ExternalRetrieval,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.source.test': {
    subject: 'chat.knowledge.external.source.test',
    routes: [POST(`${base}/source/test`)],
    body: ExternalSourceTestForm,
    reply: ExternalRetrieval,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.knowledge.create': {
    subject: 'chat.knowledge.external.knowledge.create',
    routes: [POST(`${base}/knowledge/create`)],
    body: ExternalKnowledgeCreateForm,
    reply: ExternalKnowledge,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.source.update': {
    subject: 'chat.knowledge.external.source.update',
    routes: [PATCH(`${base}/source/:id`)],
    body: ExternalSourceUpdateForm,
    reply: ExternalKnowledge,
    auth: 'admin',
    events: [],
  },
  'knowledge.external.source.create': {
    subject: 'chat.knowledge.external.source.create',
    routes: [POST(`${base}/source/create`)],
    body: ExternalSourceCreateForm,
    reply: ExternalKnowledge,
    auth: 'admin',
    events: [],
  },
});
