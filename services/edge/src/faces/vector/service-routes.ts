import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { vectorContracts, type RequestContract, type VectorCollectionsTelemetry, type VectorOpRequest } from '@gatehouse/contracts';
import { busRequest, BusError, type Bus, type TraceCarrier } from '@gatehouse/common';
import { RequestStats, type DurationStats } from './request-stats.ts';

/**
 * Qdrant's service endpoints that are more than one worker operation: `GET /telemetry` and
 * `GET /metrics` (the worker's collections part, `vector.service.telemetry`, plus this edge's
 * request statistics and app info), `GET|DELETE /issues` (nothing is ever reported) and
 * `GET /cluster` (a single node: cluster mode disabled). Shapes and metric names are Qdrant 1.19's.
 */
export interface ServiceRoutesOptions {
  bus: () => Bus;
  version: string;
  /** Shared with the gRPC port, which records its calls into it; a fresh one otherwise. */
  stats?: RequestStats;
}

const contract = vectorContracts['service.telemetry'] as RequestContract<typeof VectorOpRequest, z.ZodObject<{ result: z.ZodType }>>;
const bool = (v: unknown) => ['true', '1'].includes(String(v ?? '').toLowerCase());

export function installServiceRoutes(app: FastifyInstance, opts: ServiceRoutesOptions): void {
  const stats = opts.stats ?? new RequestStats();
  const id = randomUUID();
  const startup = new Date().toISOString();

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url;
    if (!route) return; // 404s of unknown paths are not an endpoint
    const collection = (req.params as { collection?: string } | undefined)?.collection;
    stats.record(req.method, route, reply.statusCode, (performance.now() - req.startedAt) * 1000, collection);
  });

  async function collections(level: number, trace: TraceCarrier): Promise<VectorCollectionsTelemetry> {
    const { result } = await busRequest(opts.bus(), contract, { query: { details_level: String(level) }, body: {} }, { trace, timeoutMs: 60_000 });
    return result as VectorCollectionsTelemetry;
  }

  // Compile-time features of a Qdrant build, as a release build reports them: `staging` is off, so
  // clients (and Qdrant's own suite) do not reach for the staging-only `…/debug` endpoint.
  const features = { debug: false, service_debug_feature: false, recovery_mode: false, gpu: false, rocksdb: false, staging: false };
  const app_ = () => ({ name: 'qdrant', version: opts.version, features, startup });

  app.get('/telemetry', { config: { vectorOp: 'service.telemetry' } }, async (req) => {
    const q = req.query as Record<string, unknown>;
    const raw = q.details_level;
    const level = raw === undefined ? 0 : Number(raw);
    if (!Number.isInteger(level) || level < 0) throw new BusError(400, `Query deserialize error: details_level: invalid digit found in string`);
    const perCollection = bool(q.per_collection);
    const result: Record<string, unknown> = {
      id,
      app: app_(),
      collections: await collections(level, req.trace),
      cluster: { enabled: false },
      requests: { rest: stats.rest(perCollection), grpc: stats.grpc(perCollection) },
      quota: { config: { enabled: false }, exceeded: {} },
    };
    if (level >= 1) {
      const m = process.memoryUsage();
      result.memory = { active_bytes: m.heapUsed, allocated_bytes: m.heapTotal, metadata_bytes: 0, resident_bytes: m.rss, retained_bytes: m.rss };
      result.hardware = { collection_data: {} };
      const threads = os.availableParallelism();
      result.search_pool = { mode: 'high_cpu', high_cpu_threads: threads, high_io_threads: threads };
    }
    return { result, status: 'ok', time: (performance.now() - req.startedAt) / 1000 };
  });

  app.get('/metrics', { config: { vectorOp: 'service.telemetry' } }, async (req, reply) => {
    const perCollection = bool((req.query as Record<string, unknown>).per_collection);
    const text = renderMetrics(opts.version, await collections(3, req.trace), stats.rest(perCollection), perCollection, stats.grpc(perCollection));
    return reply.type('text/plain; version=0.0.4').send(text);
  });

  const ok = (startedAt: number, result: unknown) => ({ result, status: 'ok', time: (performance.now() - startedAt) / 1000 });
  app.get('/issues', async (req) => ok(req.startedAt, { issues: [] }));
  app.delete('/issues', async (req) => ok(req.startedAt, true));
  app.get('/cluster', async (req) => ok(req.startedAt, { status: 'disabled' }));
}

// ------------------------------------------------------------------------------------------------
// Prometheus text (Qdrant's src/common/metrics/*.rs names and help texts)

/** Qdrant reports request metrics only for these REST endpoints (its REST_ENDPOINT_WHITELIST). */
const REST_ENDPOINT_WHITELIST = new Set([
  '/collections/{collection_name}/index',
  '/collections/{collection_name}/points',
  '/collections/{collection_name}/points/batch',
  '/collections/{collection_name}/points/count',
  '/collections/{collection_name}/points/delete',
  '/collections/{collection_name}/points/discover',
  '/collections/{collection_name}/points/discover/batch',
  '/collections/{collection_name}/points/facet',
  '/collections/{collection_name}/points/payload',
  '/collections/{collection_name}/points/payload/clear',
  '/collections/{collection_name}/points/payload/delete',
  '/collections/{collection_name}/points/query',
  '/collections/{collection_name}/points/query/batch',
  '/collections/{collection_name}/points/query/groups',
  '/collections/{collection_name}/points/recommend',
  '/collections/{collection_name}/points/recommend/batch',
  '/collections/{collection_name}/points/recommend/groups',
  '/collections/{collection_name}/points/scroll',
  '/collections/{collection_name}/points/search',
  '/collections/{collection_name}/points/search/batch',
  '/collections/{collection_name}/points/search/groups',
  '/collections/{collection_name}/points/search/matrix/offsets',
  '/collections/{collection_name}/points/search/matrix/pairs',
  '/collections/{collection_name}/points/vectors',
  '/collections/{collection_name}/points/vectors/delete',
]);

type Sample = { labels: [string, string][]; value: number };

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function family(out: string[], name: string, help: string, type: 'gauge' | 'counter', samples: Sample[]): void {
  // Qdrant leaves out a family without samples.
  if (samples.length === 0) return;
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  for (const s of samples) {
    const labels = s.labels.length ? `{${s.labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
    out.push(`${name}${labels} ${Number.isFinite(s.value) ? s.value : 0}`);
  }
}

type Rest = { responses: Record<string, Record<string, DurationStats>>; per_collection_responses?: Record<string, Record<string, Record<string, DurationStats>>> };
type CollectionFull = { id: string; shards?: { local?: { num_points?: number; num_vectors_by_name?: Record<string, number> } }[] };

export function renderMetrics(version: string, collections: VectorCollectionsTelemetry, rest: Rest, perCollection: boolean, grpc: Rest = { responses: {} }): string {
  const out: string[] = [];
  family(out, 'app_info', 'information about qdrant server', 'gauge', [{ labels: [['name', 'qdrant'], ['version', version]], value: 1 }]);
  family(out, 'app_status_recovery_mode', 'features enabled in qdrant server', 'gauge', [{ labels: [], value: 0 }]);
  family(out, 'collections_total', 'number of collections', 'gauge', [{ labels: [], value: collections.number_of_collections }]);
  const points: Sample[] = [];
  const vectors: Sample[] = [];
  for (const c of (collections.collections ?? []) as CollectionFull[]) {
    const local = c.shards?.[0]?.local;
    points.push({ labels: [['id', c.id]], value: local?.num_points ?? 0 });
    for (const [name, n] of Object.entries(local?.num_vectors_by_name ?? {})) vectors.push({ labels: [['collection', c.id], ['vector', name]], value: n });
  }
  family(out, 'collections_vector_total', 'total number of vectors in all collections', 'gauge', [
    { labels: [], value: vectors.reduce((a, s) => a + s.value, 0) },
  ]);
  family(out, 'collection_vectors', 'amount of vectors grouped by vector name', 'gauge', vectors);
  family(out, 'collection_points', 'approximate amount of points per collection', 'gauge', points);
  family(out, 'cluster_enabled', 'is cluster support enabled', 'gauge', [{ labels: [], value: 0 }]);

  requestFamilies(out, 'rest', rest, perCollection);
  requestFamilies(out, 'grpc', grpc, perCollection);
  return `${out.join('\n')}\n`;
}

/**
 * `<prefix>_responses_*`: global, or (per_collection) with a `collection` label instead. REST keys
 * are `"<METHOD> <endpoint>"` with timings for 200s only; gRPC keys are the RPC path, timings for
 * every status code (Qdrant's rules).
 */
function requestFamilies(out: string[], prefix: 'rest' | 'grpc', stats: Rest, perCollection: boolean): void {
  const sources: [string | undefined, Record<string, Record<string, DurationStats>>][] = perCollection
    ? Object.entries(stats.per_collection_responses ?? {})
    : [[undefined, stats.responses]];
  const total: Sample[] = [];
  const avg: Sample[] = [];
  const min: Sample[] = [];
  const max: Sample[] = [];
  for (const [collection, responses] of sources) {
    for (const [key, byStatus] of Object.entries(responses)) {
      let labels0: [string, string][];
      if (prefix === 'rest') {
        const [method, endpoint] = key.split(' ') as [string, string];
        if (!REST_ENDPOINT_WHITELIST.has(endpoint)) continue;
        labels0 = [['method', method], ['endpoint', endpoint]];
      } else {
        if (!GRPC_ENDPOINT_WHITELIST.has(key)) continue;
        labels0 = [['endpoint', key]];
      }
      for (const [status, s] of Object.entries(byStatus)) {
        const labels: [string, string][] = [...labels0, ['status', status]];
        if (collection !== undefined) labels.push(['collection', collection]);
        total.push({ labels, value: s.count });
        if (prefix === 'rest' && status !== '200') continue;
        avg.push({ labels, value: s.avg_duration_micros / 1e6 });
        min.push({ labels, value: s.min_duration_micros / 1e6 });
        max.push({ labels, value: s.max_duration_micros / 1e6 });
      }
    }
  }
  family(out, `${prefix}_responses_total`, 'total number of responses', 'counter', total);
  family(out, `${prefix}_responses_avg_duration_seconds`, 'average response duration', 'gauge', avg);
  family(out, `${prefix}_responses_min_duration_seconds`, 'minimum response duration', 'gauge', min);
  family(out, `${prefix}_responses_max_duration_seconds`, 'maximum response duration', 'gauge', max);
}

/** Qdrant's GRPC_ENDPOINT_WHITELIST. */
const GRPC_ENDPOINT_WHITELIST = new Set(
  [
    'ClearPayload', 'Count', 'CreateVectorName', 'Delete', 'DeletePayload', 'DeleteVectorName', 'Discover', 'DiscoverBatch', 'Facet', 'Get',
    'OverwritePayload', 'Query', 'QueryBatch', 'QueryGroups', 'Recommend', 'RecommendBatch', 'RecommendGroups', 'Scroll', 'Search',
    'SearchBatch', 'SearchGroups', 'SetPayload', 'UpdateBatch', 'UpdateVectors', 'Upsert',
  ].map((m) => `/qdrant.Points/${m}`),
);
