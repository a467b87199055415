import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { fail, type Tx } from '../context.ts';
import type { Embedder } from '../retrieval/embedder.ts';

/**
 * External knowledge bases (Open WebUI 0.10's "external knowledge sources", routers/knowledge.py
 * `/external/*` and retrieval/external.py): a knowledge base whose search is answered by an
 * outside retrieval service. An admin registers a connection (provider, endpoint, credentials);
 * a knowledge row then points at one collection of it through its `meta`:
 * `{source: 'external', read_only: true, external: {connection_id, source: {type, name, config},
 * provider, auth_mode, capabilities}}` — Open WebUI's shape, so its clients read it unchanged.
 *
 * Providers: `qdrant` (Qdrant's REST query API — any Qdrant, this project's vector face included;
 * the credentials' `api_key` goes in the `api-key` header) and `http`, our generic retrieval
 * endpoint (POST `{query, count, collection}` with `Authorization: Bearer <api_key>`, answered by a
 * list of results or `{results: [...]}`), for services Open WebUI has no client for. Open WebUI's
 * `milvus` and `pgvector` providers are not offered. Every query has a deadline (the connection's
 * `config.timeout`, seconds, Open WebUI's default 30): a slow or dead source costs the chat that
 * long at most and is reported, never waited on forever.
 */

export const EXTERNAL_PROVIDERS = ['qdrant', 'http'] as const;
export type ExternalProvider = (typeof EXTERNAL_PROVIDERS)[number];
export const DEFAULT_EXTERNAL_TIMEOUT_S = 30;

/** A stored connection (table knowledge_external_connection), secrets included. */
export interface ExternalConnection {
  id: string;
  name: string;
  provider: string;
  endpoint: string;
  auth_config: Record<string, unknown>;
  config: Record<string, unknown>;
  capabilities: Record<string, unknown>;
  health: Record<string, unknown> | null;
  enabled: boolean;
  created_by: string;
  created_at: number;
  updated_at: number;
}

/** A knowledge base's external source: a collection of the connection and how to read its results. */
export interface ExternalSource {
  type: 'collection';
  name: string;
  config: Record<string, unknown>;
}

/** What a retrieval found, in Open WebUI's query-result shape (one query's lists). */
export interface ExternalResult {
  documents: string[];
  metadatas: Record<string, unknown>[];
  distances: number[];
}

/** Where results came from, for their metadata: the knowledge base (or a test's stand-in). */
export interface ExternalTarget {
  id: string;
  name: string;
  source: ExternalSource;
}

/** The connection as the API shows it: credentials never leave, only whether some are set. */
export function sanitizeConnection(c: ExternalConnection) {
  const { auth_config, ...rest } = c;
  return { ...rest, auth_configured: Object.keys(auth_config ?? {}).length > 0 };
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/** The connection form (Open WebUI's ExternalKnowledgeConnectionForm), validated as it does. */
export interface ConnectionForm {
  name: string;
  provider: string;
  endpoint: string;
  auth_config?: Record<string, unknown> | null;
  config?: Record<string, unknown> | null;
  capabilities?: Record<string, unknown> | null;
  enabled?: boolean;
}

export function validConnection(form: ConnectionForm): { provider: ExternalProvider; config: Record<string, unknown> } {
  const provider = form.provider.trim().toLowerCase();
  if (!(EXTERNAL_PROVIDERS as readonly string[]).includes(provider)) fail(400, 'Unsupported external knowledge provider.');
  if (!form.name.trim()) fail(400, 'Knowledge source name is required.');
  const endpoint = form.endpoint.trim();
  if (!endpoint) fail(400, 'Knowledge source endpoint is required.');
  let url: URL | null = null;
  try {
    url = new URL(endpoint);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) fail(400, 'Knowledge source endpoint must be an http(s) URL.');
  const config: Record<string, unknown> = {};
  const timeout = form.config?.timeout;
  if (timeout !== undefined && timeout !== null) {
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > 300) fail(400, 'timeout must be a number of seconds between 0 and 300.');
    config.timeout = timeout;
  }
  return { provider: provider as ExternalProvider, config };
}

/** _normalize_external_source: one collection, its field mapping trimmed to the keys a provider reads. */
export function validSource(raw: { type?: string | null; name: string; config?: Record<string, unknown> | null }, provider: string): ExternalSource {
  const type = (raw.type ?? 'collection').trim() || 'collection';
  if (type !== 'collection') fail(400, 'Only collection sources are supported.');
  const name = raw.name.trim();
  if (!name) fail(400, 'Collection name is required.');
  const allowed = new Set(['content_field', 'metadata_field', 'document_id_field', 'title_field', 'url_field', 'score_field']);
  if (provider === 'qdrant') allowed.add('vector_field');
  const config: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw.config ?? {})) {
    if (!allowed.has(k) || v === null || v === undefined) continue;
    if (typeof v === 'string') {
      if (v.trim()) config[k] = v.trim();
    } else config[k] = v;
  }
  // Open WebUI requires the content field; the http provider has a natural default.
  if (provider === 'qdrant' && !config.content_field) fail(400, 'Content field is required.');
  return { type: 'collection', name, config };
}

export function newConnection(form: ConnectionForm, userId: string, at: number, id: string = randomUUID()): ExternalConnection {
  const { provider, config } = validConnection(form);
  return {
    id,
    name: form.name.trim(),
    provider,
    endpoint: form.endpoint.trim(),
    auth_config: form.auth_config ?? {},
    config,
    capabilities: form.capabilities ?? { retrieve: true },
    health: null,
    enabled: form.enabled ?? true,
    created_by: userId,
    created_at: at,
    updated_at: at,
  };
}

/** An update keeps the stored credentials when the form leaves `auth_config` out (null). */
export function updatedConnection(form: ConnectionForm, existing: ExternalConnection, at: number): ExternalConnection {
  const { provider, config } = validConnection(form);
  return {
    ...existing,
    name: form.name.trim(),
    provider,
    endpoint: form.endpoint.trim(),
    auth_config: form.auth_config === undefined || form.auth_config === null ? existing.auth_config : form.auth_config,
    config,
    capabilities: form.capabilities ?? { retrieve: true },
    enabled: form.enabled ?? true,
    updated_at: at,
  };
}

// ---- storage -----------------------------------------------------------------------------------

const COLUMNS = ['id', 'name', 'provider', 'endpoint', 'auth_config', 'config', 'capabilities', 'health', 'enabled', 'created_by', 'created_at', 'updated_at'] as const;

export async function listConnections(sql: Sql | Tx): Promise<ExternalConnection[]> {
  return (sql as Sql)<ExternalConnection[]>`select ${(sql as Sql)(COLUMNS)} from knowledge_external_connection order by created_at, id`;
}

export async function getConnection(sql: Sql | Tx, id: string, lock = false): Promise<ExternalConnection | undefined> {
  const s = sql as Sql;
  const [row] = await s<ExternalConnection[]>`select ${s(COLUMNS)} from knowledge_external_connection where id = ${id} ${lock ? s`for update` : s``}`;
  return row;
}

export async function saveConnection(tx: Tx, c: ExternalConnection): Promise<void> {
  const s = tx as unknown as Sql;
  await s`insert into knowledge_external_connection ${s({ ...c, auth_config: s.json(c.auth_config as never), config: s.json(c.config as never), capabilities: s.json(c.capabilities as never), health: c.health ? s.json(c.health as never) : null } as never, ...COLUMNS)}
    on conflict (id) do update set name = excluded.name, provider = excluded.provider, endpoint = excluded.endpoint,
      auth_config = excluded.auth_config, config = excluded.config, capabilities = excluded.capabilities,
      health = excluded.health, enabled = excluded.enabled, updated_at = excluded.updated_at`;
}

/** How many knowledge bases read through the connection (a used connection cannot be deleted). */
export async function connectionUses(sql: Sql | Tx, id: string): Promise<number> {
  const [row] = await (sql as Sql)<{ n: number }[]>`select count(*)::int as n from knowledge where meta -> 'external' ->> 'connection_id' = ${id}`;
  return row?.n ?? 0;
}

/** The knowledge row's meta for an external source (Open WebUI's exact keys). */
export function externalMeta(connection: ExternalConnection, source: ExternalSource): Record<string, unknown> {
  return {
    source: 'external',
    read_only: true,
    external: {
      connection_id: connection.id,
      source,
      provider: connection.provider,
      auth_mode: 'service_account',
      capabilities: { retrieve: true },
    },
  };
}

/** The external part of a knowledge row's meta, or null for a local knowledge base. */
export function externalOf(meta: Record<string, unknown> | null): { connectionId: string; source: ExternalSource } | null {
  if (!isObject(meta) || meta.source !== 'external' || !isObject(meta.external)) return null;
  const ext = meta.external;
  const src = isObject(ext.source) ? ext.source : {};
  if (typeof ext.connection_id !== 'string') return null;
  return { connectionId: ext.connection_id, source: { type: 'collection', name: typeof src.name === 'string' ? src.name : '', config: isObject(src.config) ? src.config : {} } };
}

// ---- retrieval ---------------------------------------------------------------------------------

/** `a.b.c` in nested objects (Open WebUI's _get_path). */
function getPath(data: unknown, path: unknown, dflt: unknown = undefined): unknown {
  if (typeof path !== 'string' || !path) return dflt;
  let v: unknown = data;
  for (const part of path.split('.')) {
    if (!isObject(v)) return dflt;
    v = part in v ? v[part] : dflt;
  }
  return v;
}

/** _normalize_result: one hit → its text, metadata naming the knowledge base, and its score. */
function normalize(result: unknown, mapping: Record<string, unknown>, target: ExternalTarget, score: unknown): { content: string; metadata: Record<string, unknown>; distance: number } {
  const content = getPath(result, mapping.content_field ?? 'content', '');
  const title = getPath(result, mapping.title_field ?? 'title', null);
  const source = getPath(result, mapping.source_field ?? 'source', null);
  const url = getPath(result, mapping.url_field ?? 'url', null);
  const documentId = getPath(result, mapping.document_id_field ?? 'document_id', null);
  const page = getPath(result, mapping.page_field ?? 'page', null);
  let metadata = getPath(result, mapping.metadata_field ?? 'metadata', {}) ?? {};
  const s = getPath(result, mapping.score_field ?? 'score', score);
  if (!isObject(metadata)) metadata = { external_metadata: metadata };
  const meta = { ...(metadata as Record<string, unknown>) };
  const str = (v: unknown) => (typeof v === 'string' && v ? v : typeof v === 'number' ? String(v) : null);
  const sourceName = str(source) ?? str(title) ?? str(meta.source) ?? str(meta.name) ?? target.name;
  Object.assign(meta, {
    name: str(title) ?? str(meta.name) ?? sourceName,
    source: sourceName,
    url: str(url),
    file_id: str(documentId) ?? `external-${target.id}`,
    knowledge_id: target.id,
    knowledge_name: target.name,
    external: true,
  });
  if (page !== null && page !== undefined) meta.page = page;
  if (documentId !== null && documentId !== undefined) meta.document_id = documentId;
  return { content: typeof content === 'string' ? content : JSON.stringify(content ?? ''), metadata: meta, distance: typeof s === 'number' ? s : Number(s) || 0 };
}

/** Why a source could not answer, in words for the reader of the answer. */
export class ExternalSourceError extends Error {}

/** A search answer is a few chunks of text; one this big is a misconfigured endpoint, not hits. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** The body as text, refusing one larger than `max` bytes instead of holding it. */
async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    // Leaving the loop by a throw cancels the stream (the iterator's return()).
    if (size > max) throw new ExternalSourceError(`answered more than ${max / 1024 / 1024} MB`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function postJson(url: string, headers: Record<string, string>, body: unknown, timeoutS: number): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutS * 1000) });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new ExternalSourceError(`no answer within ${timeoutS} s`);
    throw new ExternalSourceError(`unreachable (${e.cause?.code ?? e.message})`);
  }
  let text: string;
  try {
    text = await readCapped(res, MAX_ANSWER_BYTES);
  } catch (err) {
    if (err instanceof ExternalSourceError) throw err;
    throw new ExternalSourceError((err as Error).name === 'TimeoutError' ? `no answer within ${timeoutS} s` : 'the answer was cut off');
  }
  if (!res.ok) throw new ExternalSourceError(`answered HTTP ${res.status}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ExternalSourceError('answered something that is not JSON');
  }
}

/**
 * Query one external source for `query`: at most `count` hits, each normalised as Open WebUI does.
 * Throws ExternalSourceError when the source is disabled, unreachable, slow or answers nonsense.
 */
export async function retrieveExternal(connection: ExternalConnection, target: ExternalTarget, query: string, count: number, embedder: Embedder): Promise<ExternalResult> {
  if (!connection.enabled) throw new ExternalSourceError('the connection is disabled');
  const timeoutS = typeof connection.config.timeout === 'number' ? connection.config.timeout : DEFAULT_EXTERNAL_TIMEOUT_S;
  const apiKey = typeof connection.auth_config.api_key === 'string' ? connection.auth_config.api_key : null;
  const base = connection.endpoint.replace(/\/+$/, '');
  const cfg = target.source.config;
  const hits: ReturnType<typeof normalize>[] = [];
  if (connection.provider === 'qdrant') {
    const [vector] = await embedder.embed([query]);
    const body: Record<string, unknown> = { query: vector, limit: count, with_payload: true };
    if (typeof cfg.vector_field === 'string') body.using = cfg.vector_field;
    const answer = await postJson(`${base}/collections/${encodeURIComponent(target.source.name)}/points/query`, apiKey ? { 'api-key': apiKey } : {}, body, timeoutS);
    const points = isObject(answer) && isObject(answer.result) && Array.isArray(answer.result.points) ? answer.result.points : null;
    if (!points) throw new ExternalSourceError('answered something that is not a Qdrant query result');
    const mapping = { content_field: cfg.content_field ?? 'payload.text', metadata_field: cfg.metadata_field ?? 'payload.metadata', document_id_field: cfg.document_id_field ?? 'id', score_field: 'score' };
    for (const p of points) hits.push(normalize(p, mapping, target, isObject(p) ? p.score : 0));
  } else if (connection.provider === 'http') {
    const answer = await postJson(base, apiKey ? { authorization: `Bearer ${apiKey}` } : {}, { query, count, collection: target.source.name }, timeoutS);
    const results = Array.isArray(answer) ? answer : isObject(answer) && Array.isArray(answer.results) ? answer.results : null;
    if (!results) throw new ExternalSourceError('answered something that is not a list of results');
    for (const r of results) hits.push(normalize(r, cfg, target, isObject(r) ? r.score : 0));
  } else {
    throw new ExternalSourceError(`unsupported provider ${connection.provider}`);
  }
  const top = hits.slice(0, count);
  return { documents: top.map((h) => h.content), metadatas: top.map((h) => h.metadata), distances: top.map((h) => h.distance) };
}
