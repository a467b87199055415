/**
 * Qdrant's request statistics (`requests.rest.responses` of `GET /telemetry`, `rest_responses_*`
 * in `/metrics`): per `"<METHOD> <route>"` and status, a count and durations, kept in memory by
 * this edge process (Qdrant keeps them per node). Routes are written as Qdrant writes them
 * (`/collections/{collection_name}/points`), and also kept per collection for `per_collection`.
 * The gRPC port records its calls here too (`grpc`), one instance per edge process (main.ts).
 */
export type DurationStats = {
  count: number;
  avg_duration_micros: number;
  min_duration_micros: number;
  max_duration_micros: number;
  total_duration_micros: number;
  last_responded: string;
};
type ByStatus = Map<number, DurationStats>;
type ByEndpoint = Map<string, ByStatus>;

/** Qdrant averages the latest 128 operations; an exponential average with that window is close. */
const WINDOW = 128;
/** At most this many distinct collections are tracked per collection (the rest fold into the totals only). */
const MAX_COLLECTIONS = 10_000;

/** Fastify's `/collections/:collection/points/:id` → Qdrant's `/collections/{collection_name}/points/{id}`. */
export function qdrantRoute(url: string): string {
  let route = routes.get(url);
  if (route === undefined) routes.set(url, (route = toQdrantRoute(url)));
  return route;
}
/** Routes are few and fixed (the catalog's): each is rewritten once. */
const routes = new Map<string, string>();
function toQdrantRoute(url: string): string {
  return url
    .replace(':collection', '{collection_name}')
    .replace(':field', '{field_name}')
    .replace(/\/snapshots\/:id$/, '/snapshots/{snapshot_name}')
    .replace(':id', '{id}');
}

function record(map: ByEndpoint, endpoint: string, status: number, micros: number, now: Date): void {
  let byStatus = map.get(endpoint);
  if (!byStatus) map.set(endpoint, (byStatus = new Map()));
  const s = byStatus.get(status);
  if (!s) {
    byStatus.set(status, {
      count: 1,
      avg_duration_micros: micros,
      min_duration_micros: micros,
      max_duration_micros: micros,
      total_duration_micros: Math.round(micros),
      last_responded: now.toISOString(),
    });
    return;
  }
  s.count += 1;
  const w = 1 / Math.min(s.count, WINDOW);
  s.avg_duration_micros += (micros - s.avg_duration_micros) * w;
  s.min_duration_micros = Math.min(s.min_duration_micros, micros);
  s.max_duration_micros = Math.max(s.max_duration_micros, micros);
  s.total_duration_micros += Math.round(micros);
  s.last_responded = now.toISOString();
}

function toJson(map: ByEndpoint): Record<string, Record<string, DurationStats>> {
  const out: Record<string, Record<string, DurationStats>> = {};
  for (const [endpoint, byStatus] of [...map].sort(([a], [b]) => a.localeCompare(b))) {
    out[endpoint] = Object.fromEntries([...byStatus].map(([status, s]) => [String(status), { ...s }]));
  }
  return out;
}

type Side = { total: ByEndpoint; perCollection: Map<string, ByEndpoint> };

export class RequestStats {
  readonly total: ByEndpoint = new Map();
  readonly perCollection = new Map<string, ByEndpoint>();
  /** gRPC calls, keyed `/qdrant.Points/Search` by status code (0 = OK), as Qdrant's GrpcTelemetry. */
  private readonly grpcSide: Side = { total: new Map(), perCollection: new Map() };

  /** One answered gRPC call (the gRPC port of the same vector face). */
  recordGrpc(rpc: string, code: number, micros: number, collection?: string): void {
    recordSide(this.grpcSide, `/${rpc.replace(/^\//, '')}`, code, micros, collection);
  }

  /** `GrpcTelemetry`. */
  grpc(perCollection: boolean): ReturnType<RequestStats['rest']> {
    return sideJson(this.grpcSide, perCollection);
  }

  /** One answered request: `route` in Fastify syntax (the matched route), its collection if any. */
  record(method: string, route: string, status: number, micros: number, collection?: string): void {
    recordSide(this, `${method} ${qdrantRoute(route)}`, status, micros, collection);
  }

  /** `WebApiTelemetry`: `responses`, and `per_collection_responses` when asked for. */
  rest(perCollection: boolean): { responses: Record<string, Record<string, DurationStats>>; per_collection_responses?: Record<string, Record<string, Record<string, DurationStats>>> } {
    return sideJson(this, perCollection);
  }
}

function recordSide(side: Side, endpoint: string, status: number, micros: number, collection?: string): void {
  const now = new Date();
  record(side.total, endpoint, status, micros, now);
  if (collection === undefined) return;
  let byEndpoint = side.perCollection.get(collection);
  if (!byEndpoint) {
    if (side.perCollection.size >= MAX_COLLECTIONS) return;
    side.perCollection.set(collection, (byEndpoint = new Map()));
  }
  record(byEndpoint, endpoint, status, micros, now);
}

function sideJson(side: Side, perCollection: boolean): ReturnType<RequestStats['rest']> {
  const out: ReturnType<RequestStats['rest']> = { responses: toJson(side.total) };
  if (perCollection) out.per_collection_responses = Object.fromEntries([...side.perCollection].map(([c, m]) => [c, toJson(m)]));
  return out;
}
