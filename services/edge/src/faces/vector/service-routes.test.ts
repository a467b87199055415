import { describe, expect, it } from 'vitest';
import { qdrantRoute, RequestStats } from './request-stats.ts';
import { renderMetrics } from './service-routes.ts';

describe('request statistics (telemetry requests.rest)', () => {
  it('keys routes as Qdrant writes them and keeps per-status durations', () => {
    expect(qdrantRoute('/collections/:collection/points/:id')).toBe('/collections/{collection_name}/points/{id}');
    expect(qdrantRoute('/collections/:collection/index/:field')).toBe('/collections/{collection_name}/index/{field_name}');
    expect(qdrantRoute('/collections/:collection/snapshots/:id')).toBe('/collections/{collection_name}/snapshots/{snapshot_name}');
    const s = new RequestStats();
    s.record('PUT', '/collections/:collection/points', 200, 100, 'a');
    s.record('PUT', '/collections/:collection/points', 200, 300, 'b');
    s.record('PUT', '/collections/:collection/points', 404, 50, 'c');
    const rest = s.rest(false);
    const ok = rest.responses['PUT /collections/{collection_name}/points']!['200']!;
    expect([ok.count, ok.avg_duration_micros, ok.min_duration_micros, ok.max_duration_micros, ok.total_duration_micros]).toEqual([2, 200, 100, 300, 400]);
    expect(rest.responses['PUT /collections/{collection_name}/points']!['404']!.count).toBe(1);
    expect(rest.per_collection_responses).toBeUndefined();
    expect(Object.keys(s.rest(true).per_collection_responses!).sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('/metrics in Qdrant\'s Prometheus format', () => {
  const collections = {
    number_of_collections: 1,
    collections: [{ id: 'books', shards: [{ local: { num_points: 7, num_vectors_by_name: { '': 7, sparse: 2 } } }] }],
  };
  const stats = new RequestStats();
  stats.record('POST', '/collections/:collection/points/scroll', 200, 1500, 'books');
  stats.record('POST', '/collections/:collection/points/scroll', 400, 10, 'books');
  stats.record('GET', '/collections/:collection', 200, 10, 'books'); // not on Qdrant's list: no series

  it('global mode: app, collections and request series without a collection label', () => {
    const text = renderMetrics('1.19.0', collections, stats.rest(false), false);
    expect(text).toContain('# HELP app_info information about qdrant server\n# TYPE app_info gauge\napp_info{name="qdrant",version="1.19.0"} 1\n');
    expect(text).toContain('collections_total 1\n');
    expect(text).toContain('collections_vector_total 9\n');
    expect(text).toContain('collection_vectors{collection="books",vector="sparse"} 2\n');
    expect(text).toContain('collection_points{id="books"} 7\n');
    expect(text).toContain('# TYPE rest_responses_total counter\n');
    expect(text).toContain('rest_responses_total{method="POST",endpoint="/collections/{collection_name}/points/scroll",status="200"} 1\n');
    expect(text).toContain('rest_responses_total{method="POST",endpoint="/collections/{collection_name}/points/scroll",status="400"} 1\n');
    // Timings for 200s only, in seconds.
    expect(text).toContain('rest_responses_avg_duration_seconds{method="POST",endpoint="/collections/{collection_name}/points/scroll",status="200"} 0.0015\n');
    expect(text).not.toContain('status="400"} 0.00001');
    expect(text).not.toContain('endpoint="/collections/{collection_name}"');
  });

  it('per_collection: the request series carry the collection instead', () => {
    const text = renderMetrics('1.19.0', collections, stats.rest(true), true);
    expect(text).toContain('rest_responses_total{method="POST",endpoint="/collections/{collection_name}/points/scroll",status="200",collection="books"} 1\n');
    expect(text.split('\n').filter((l) => l.startsWith('rest_') && !l.includes('collection="books"'))).toEqual([]);
  });
});
