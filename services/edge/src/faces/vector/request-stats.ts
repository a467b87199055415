/**
 * Qdrant's request statistics (`requests.rest.responses` of `GET /telemetry`, `rest_responses_*`
 * in `/metrics`): per `"<METHOD> <route>"` and status, a count and durations, kept in memory by
 * this edge process (Qdrant keeps them per node). Routes are written as Qdrant writes them
 * (`/collections/{collection_name}/points`), and also kept per collection for `per_collection`.
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

export class RequestStats {
  private readonly total: ByEndpoint = new Map();
  private readonly perCollection = new Map<string, ByEndpoint>();

  /** One answered request: `route` in Fastify syntax (the matched route), its collection if any. */
  record(method: string, route: string, status: number, micros: number, collection?: string): void {
    const endpoint = `${method} ${qdrantRoute(route)}`;
    const now = new Date();
    record(this.total, endpoint, status, micros, now);
    if (collection === undefined) return;
    let byEndpoint = this.perCollection.get(collection);
    if (!byEndpoint) {
      if (this.perCollection.size >= MAX_COLLECTIONS) return;
      this.perCollection.set(collection, (byEndpoint = new Map()));
    }
    record(byEndpoint, endpoint, status, micros, now);
  }

  /** `WebApiTelemetry`: `responses`, and `per_collection_responses` when asked for. */
  rest(perCollection: boolean): { responses: Record<string, Record<string, DurationStats>>; per_collection_responses?: Record<string, Record<string, Record<string, DurationStats>>> } {
    const out: ReturnType<RequestStats['rest']> = { responses: toJson(this.total) };
    if (perCollection) {
      out.per_collection_responses = Object.fromEntries([...this.perCollection].map(([c, m]) => [c, toJson(m)]));
    }
    return out;
  }
}
