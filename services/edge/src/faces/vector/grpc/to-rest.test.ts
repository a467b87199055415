import { describe, expect, it } from 'vitest';
import { VECTOR_CATALOG } from '@gatehouse/contracts';
import { decodeMessage, encodeMessage, qdrantService } from './qdrant-proto.ts';
import { RPC_TABLE } from './rpc-table.ts';
import { InvalidArgument, toRest, type Msg } from './to-rest.ts';

/**
 * gRPC → REST: each message goes over the wire first (encode, then decode the way the server
 * does), so what is tested is what a client's bytes become — defaults dropped, oneofs as sent.
 */
const wire = (type: string, m: Msg): Msg => decodeMessage(type, encodeMessage(type, m));
const rest = (type: string, m: Msg): unknown => toRest(type, wire(type, m));
/** The REST request an RPC's message becomes. */
const request = (rpc: string, type: string, m: Msg) => RPC_TABLE[rpc]!.request(wire(type, m));

describe('the RPC table', () => {
  it('has an entry for every RPC of the three services, and each names an operation of the catalog or none', () => {
    const rpcs = (['qdrant.Collections', 'qdrant.Points', 'qdrant.Snapshots'] as const).flatMap((svc) => Object.keys(qdrantService(svc)).map((m) => `${svc}/${m}`));
    expect(rpcs).toHaveLength(50); // Qdrant 1.19.0: 14 + 30 + 6
    expect(Object.keys(RPC_TABLE).sort()).toEqual(rpcs.sort());
    const missing = Object.entries(RPC_TABLE).filter(([, m]) => m.op !== null && !(m.op in VECTOR_CATALOG));
    expect(missing.map(([rpc, m]) => `${rpc} → ${m.op}`)).toEqual([]);
  });
});

describe('PointId', () => {
  it('is a number or a UUID string; an empty one is refused', () => {
    expect(rest('qdrant.PointId', { num: 42 })).toBe(42);
    expect(rest('qdrant.PointId', { num: 0 })).toBe(0);
    expect(rest('qdrant.PointId', { uuid: '5c56c793-69f3-4fbf-87e6-c4bf54c28c26' })).toBe('5c56c793-69f3-4fbf-87e6-c4bf54c28c26');
    expect(() => rest('qdrant.PointId', {})).toThrow(InvalidArgument);
  });
});

describe('Value and Struct (payloads)', () => {
  it('every JSON kind, nested, and the zero values a oneof still carries', () => {
    const payload = {
      s: { string_value: '' },
      i: { integer_value: 0 },
      big: { integer_value: -9007199254740991 },
      d: { double_value: 2.5 },
      b: { bool_value: false },
      n: { null_value: 'NULL_VALUE' },
      empty: {},
      list: { list_value: { values: [{ integer_value: 1 }, { string_value: 'x' }, { list_value: {} }] } },
      obj: { struct_value: { fields: { deep: { struct_value: { fields: { k: { bool_value: true } } } } } } },
    };
    const body = request('qdrant.Points/SetPayload', 'qdrant.SetPayloadPoints', {
      collection_name: 'c',
      payload,
      points_selector: { points: { ids: [{ num: 1 }] } },
    }).body as Msg;
    expect(body.payload).toEqual({ s: '', i: 0, big: -9007199254740991, d: 2.5, b: false, n: null, empty: null, list: [1, 'x', []], obj: { deep: { k: true } } });
    expect(body.points).toEqual([1]);
  });
});

describe('Vectors', () => {
  const point = (vectors: Msg) => (request('qdrant.Points/Upsert', 'qdrant.UpsertPoints', { collection_name: 'c', points: [{ id: { num: 1 }, vectors }] }).body as { points: Msg[] }).points[0]!.vector;

  it('dense, sparse and multi-dense, unnamed and named (mixed kinds in one point)', () => {
    expect(point({ vector: { dense: { data: [1, 2] } } })).toEqual([1, 2]);
    expect(point({ vector: { multi_dense: { vectors: [{ data: [1, 2] }, { data: [3, 4] }] } } })).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(
      point({
        vectors: {
          vectors: {
            text: { sparse: { indices: [3, 7], values: [0.5, 0.25] } },
            image: { dense: { data: [0.5] } },
            colbert: { multi_dense: { vectors: [{ data: [1] }, { data: [2] }] } },
          },
        },
      }),
    ).toEqual({ text: { indices: [3, 7], values: [0.5, 0.25] }, image: [0.5], colbert: [[1], [2]] });
  });

  it('the deprecated `data` forms: dense, sparse with `indices`, multi with `vectors_count`', () => {
    expect(point({ vector: { data: [1, 2, 3] } })).toEqual([1, 2, 3]);
    expect(point({ vectors: { vectors: { s: { data: [0.5], indices: { data: [9] } } } } })).toEqual({ s: { indices: [9], values: [0.5] } });
    expect(point({ vector: { data: [1, 2, 3, 4], vectors_count: 2 } })).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(() => point({ vector: { data: [1, 2, 3], vectors_count: 2 } })).toThrow(/Malformed multi vector/);
  });

  it('a point without vectors is an empty map (all named vectors optional)', () => {
    expect(point({})).toEqual({});
  });

  it('deprecated search: vector_name and sparse_indices make REST’s named vector', () => {
    const b = (m: Msg) => request('qdrant.Points/Search', 'qdrant.SearchPoints', { collection_name: 'c', limit: 3, ...m }).body as Msg;
    expect(b({ vector: [1, 0] })).toMatchObject({ vector: [1, 0], limit: 3 });
    expect(b({ vector: [1, 0], vector_name: 'img' }).vector).toEqual({ name: 'img', vector: [1, 0] });
    expect(b({ vector: [0.5], vector_name: 'txt', sparse_indices: { data: [4] } }).vector).toEqual({ name: 'txt', vector: { indices: [4], values: [0.5] } });
  });
});

describe('Filter', () => {
  const f = (m: Msg) => rest('qdrant.Filter', m);
  const field = (c: Msg) => ({ field: { key: 'k', ...c } });

  it('every match kind', () => {
    const cases: [Msg, Msg][] = [
      [{ keyword: 'a' }, { value: 'a' }],
      [{ integer: 0 }, { value: 0 }],
      [{ boolean: false }, { value: false }],
      [{ text: 'word' }, { text: 'word' }],
      [{ phrase: 'two words' }, { phrase: 'two words' }],
      [{ text_any: 'a b' }, { text_any: 'a b' }],
      [{ keywords: { strings: ['a', 'b'] } }, { any: ['a', 'b'] }],
      [{ integers: { integers: [1, 2] } }, { any: [1, 2] }],
      [{ except_keywords: { strings: ['a'] } }, { except: ['a'] }],
      [{ except_integers: { integers: [3] } }, { except: [3] }],
    ];
    for (const [match, want] of cases) expect(f({ must: [field({ match })] }), JSON.stringify(match)).toEqual({ must: [{ key: 'k', match: want }] });
  });

  it('ranges, datetimes, geo, values count and the field flags', () => {
    expect(f({ must: [field({ range: { gte: 0, lt: 2.5 } })] })).toEqual({ must: [{ key: 'k', range: { gte: 0, lt: 2.5 } }] });
    expect(f({ must: [field({ datetime_range: { gt: { seconds: 1767225600, nanos: 500_000_000 } } })] })).toEqual({
      must: [{ key: 'k', range: { gt: '2026-01-01T00:00:00.500Z' } }],
    });
    expect(f({ should: [field({ geo_radius: { center: { lon: 13.4, lat: 52.5 }, radius: 1000 } })] })).toEqual({
      should: [{ key: 'k', geo_radius: { center: { lon: 13.4, lat: 52.5 }, radius: 1000 } }],
    });
    expect(f({ must: [field({ values_count: { gte: 2 } })] })).toEqual({ must: [{ key: 'k', values_count: { gte: 2 } }] });
    expect(f({ must: [field({ is_empty: true })] })).toEqual({ must: [{ key: 'k', is_empty: true }] });
  });

  it('the other conditions, nesting, min_should; empty lists are unset (as Qdrant reads them)', () => {
    expect(
      f({
        must: [{ is_empty: { key: 'a' } }, { is_null: { key: 'b' } }, { has_id: { has_id: [{ num: 1 }, { uuid: 'u' }] } }, { has_vector: { has_vector: 'img' } }],
        must_not: [{ filter: { should: [field({ match: { keyword: 'x' } })] } }, { nested: { key: 'arr', filter: { must: [field({ range: { gt: 1 } })] } } }],
        should: [],
        min_should: { conditions: [field({ match: { integer: 1 } })], min_count: 1 },
      }),
    ).toEqual({
      must: [{ is_empty: { key: 'a' } }, { is_null: { key: 'b' } }, { has_id: [1, 'u'] }, { has_vector: 'img' }],
      must_not: [{ should: [{ key: 'k', match: { value: 'x' } }] }, { nested: { key: 'arr', filter: { must: [{ key: 'k', range: { gt: 1 } }] } } }],
      min_should: { conditions: [{ key: 'k', match: { value: 1 } }], min_count: 1 },
    });
    expect(() => f({ must: [{}] })).toThrow(/Condition is empty/);
  });
});

describe('selectors', () => {
  const get = (m: Msg) => request('qdrant.Points/Get', 'qdrant.GetPoints', { collection_name: 'c', ids: [{ num: 1 }], ...m }).body as Msg;
  it('with_payload: enable (false too), include, exclude; with_vectors: enable or names', () => {
    expect(get({ with_payload: { enable: false } }).with_payload).toBe(false);
    expect(get({ with_payload: { include: { fields: ['a', 'b.c'] } } }).with_payload).toEqual({ include: ['a', 'b.c'] });
    expect(get({ with_payload: { exclude: { fields: ['a'] } } }).with_payload).toEqual({ exclude: ['a'] });
    expect(get({ with_vectors: { enable: true } }).with_vector).toBe(true);
    expect(get({ with_vectors: { include: { names: ['img'] } } }).with_vector).toEqual(['img']);
    // Absent: REST's default applies.
    expect(get({})).toEqual({ ids: [1] });
  });

  it('points selectors spread into the body: ids or filter', () => {
    const del = (points: Msg) => request('qdrant.Points/Delete', 'qdrant.DeletePoints', { collection_name: 'c', wait: true, points }).body;
    expect(del({ points: { ids: [{ num: 1 }, { num: 2 }] } })).toEqual({ points: [1, 2] });
    expect(del({ filter: { must: [{ is_empty: { key: 'x' } }] } })).toEqual({ filter: { must: [{ is_empty: { key: 'x' } }] } });
  });

  it('wait, ordering, timeout and read consistency become query parameters', () => {
    const r = request('qdrant.Points/Upsert', 'qdrant.UpsertPoints', { collection_name: 'c', wait: false, ordering: { type: 'Strong' }, timeout: 5, points: [] });
    expect(r).toEqual({ collection: 'c', query: { wait: 'false', ordering: 'strong', timeout: '5' }, body: { points: [] } });
    expect(request('qdrant.Points/Count', 'qdrant.CountPoints', { collection_name: 'c', read_consistency: { type: 'Majority' } }).query).toEqual({ consistency: 'majority' });
    expect(request('qdrant.Points/Count', 'qdrant.CountPoints', { collection_name: 'c', read_consistency: { factor: 2 } }).query).toEqual({ consistency: '2' });
  });

  it('a request without a collection name is refused before the bus', () => {
    expect(() => request('qdrant.Points/Count', 'qdrant.CountPoints', {})).toThrow(InvalidArgument);
  });
});

describe('Query', () => {
  const q = (m: Msg) => request('qdrant.Points/Query', 'qdrant.QueryPoints', { collection_name: 'c', ...m }).body as Msg;

  it('nearest by vector, by point id, sparse; with using, limit and prefetch', () => {
    expect(q({ query: { nearest: { dense: { data: [1, 0] } } }, limit: 5 })).toEqual({ query: { nearest: [1, 0] }, limit: 5 });
    expect(q({ query: { nearest: { id: { uuid: 'u' } } } }).query).toEqual({ nearest: 'u' });
    expect(
      q({
        prefetch: [
          { query: { nearest: { sparse: { indices: [1], values: [0.5] } } }, using: 'text', limit: 20 },
          { query: { nearest: { dense: { data: [1] } } }, using: 'img', filter: { must: [{ has_vector: { has_vector: 'img' } }] } },
        ],
        query: { fusion: 'RRF' },
        with_vectors: { enable: false },
      }),
    ).toEqual({
      prefetch: [
        { query: { nearest: { indices: [1], values: [0.5] } }, using: 'text', limit: 20 },
        { query: { nearest: [1] }, using: 'img', filter: { must: [{ has_vector: 'img' }] } },
      ],
      query: { fusion: 'rrf' },
      with_vector: false,
    });
  });

  it('recommend, discover, context, order_by, sample, rrf', () => {
    expect(q({ query: { recommend: { positive: [{ id: { num: 1 } }], negative: [{ dense: { data: [0, 1] } }], strategy: 'BestScore' } } }).query).toEqual({
      recommend: { positive: [1], negative: [[0, 1]], strategy: 'best_score' },
    });
    expect(
      q({ query: { discover: { target: { id: { num: 1 } }, context: { pairs: [{ positive: { id: { num: 2 } }, negative: { id: { num: 3 } } }] } } } }).query,
    ).toEqual({ discover: { target: 1, context: [{ positive: 2, negative: 3 }] } });
    expect(q({ query: { context: { pairs: [{ positive: { id: { num: 2 } }, negative: { id: { num: 3 } } }] } } }).query).toEqual({
      context: [{ positive: 2, negative: 3 }],
    });
    expect(q({ query: { order_by: { key: 'year', direction: 'Desc', start_from: { integer: 2020 } } } }).query).toEqual({
      order_by: { key: 'year', direction: 'desc', start_from: 2020 },
    });
    expect(q({ query: { sample: 'Random' } }).query).toEqual({ sample: 'random' });
    expect(q({ query: { rrf: { k: 60 } } }).query).toEqual({ rrf: { k: 60 } });
  });

  it('recommend (deprecated RPC): ids and example vectors in one list', () => {
    const b = request('qdrant.Points/Recommend', 'qdrant.RecommendPoints', {
      collection_name: 'c',
      positive: [{ num: 1 }],
      positive_vectors: [{ dense: { data: [1, 0] } }],
      limit: 3,
      strategy: 'AverageVector',
      using: 'img',
    }).body;
    expect(b).toEqual({ positive: [1, [1, 0]], negative: [], limit: 3, strategy: 'average_vector', using: 'img' });
  });
});

describe('collections and batches', () => {
  it('create: unnamed or named vectors, sparse vectors with IDF, configs copied by name', () => {
    const b = request('qdrant.Collections/Create', 'qdrant.CreateCollection', {
      collection_name: 'c',
      vectors_config: {
        params_map: {
          map: {
            img: { size: 4, distance: 'Cosine', datatype: 'Float16', multivector_config: { comparator: 'MaxSim' }, hnsw_config: { m: 32 } },
          },
        },
      },
      sparse_vectors_config: { map: { text: { modifier: 'Idf' } } },
      optimizers_config: { indexing_threshold: 0, max_optimization_threads: { setting: 'Auto' } },
      metadata: { team: { string_value: 'search' } },
    }).body;
    expect(b).toEqual({
      vectors: { img: { size: 4, distance: 'Cosine', datatype: 'float16', multivector_config: { comparator: 'max_sim' }, hnsw_config: { m: 32 } } },
      sparse_vectors: { text: { modifier: 'idf' } },
      optimizers_config: { indexing_threshold: 0, max_optimization_threads: 'auto' },
      metadata: { team: 'search' },
    });
    const single = request('qdrant.Collections/Create', 'qdrant.CreateCollection', { collection_name: 'c', vectors_config: { params: { size: 3, distance: 'Euclid' } } });
    expect(single.body).toEqual({ vectors: { size: 3, distance: 'Euclid' } });
  });

  it('field index: a type, or params that carry it', () => {
    const idx = (m: Msg) => request('qdrant.Points/CreateFieldIndex', 'qdrant.CreateFieldIndexCollection', { collection_name: 'c', field_name: 'f', ...m }).body;
    expect(idx({ field_type: 'FieldTypeKeyword' })).toEqual({ field_name: 'f', field_schema: 'keyword' });
    expect(idx({ field_type: 'FieldTypeText', field_index_params: { text_index_params: { tokenizer: 'Word', lowercase: true } } })).toEqual({
      field_name: 'f',
      field_schema: { type: 'text', tokenizer: 'word', lowercase: true },
    });
  });

  it('named vector create: dense params, or sparse with its datatype in the index', () => {
    const nv = (m: Msg) => request('qdrant.Points/CreateVectorName', 'qdrant.CreateVectorNameRequest', { collection_name: 'c', vector_name: 'v', ...m });
    expect(nv({ dense_config: { size: 8, distance: 'Dot', multivector_config: { comparator: 'MaxSim' } } })).toEqual({
      collection: 'c',
      field: 'v',
      query: {},
      body: { dense: { size: 8, distance: 'Dot', multivector_config: { comparator: 'max_sim' } } },
    });
    expect(nv({ sparse_config: { modifier: 'Idf', datatype: 'Float16' } }).body).toEqual({ sparse: { modifier: 'idf', index: { datatype: 'float16' } } });
    expect(() => nv({})).toThrow(InvalidArgument);
  });

  it('update batch: every operation kind, externally tagged as REST', () => {
    const b = request('qdrant.Points/UpdateBatch', 'qdrant.UpdateBatchPoints', {
      collection_name: 'c',
      operations: [
        { upsert: { points: [{ id: { num: 1 }, vectors: { vector: { dense: { data: [1] } } } }] } },
        { delete_points: { points: { points: { ids: [{ num: 2 }] } } } },
        { set_payload: { payload: { a: { integer_value: 1 } }, points_selector: { filter: {} }, key: 'x' } },
        { overwrite_payload: { payload: {}, points_selector: { points: { ids: [{ num: 1 }] } } } },
        { delete_payload: { keys: ['a'], points_selector: { points: { ids: [{ num: 1 }] } } } },
        { clear_payload: { points: { points: { ids: [{ num: 1 }] } } } },
        { update_vectors: { points: [{ id: { num: 1 }, vectors: { vector: { dense: { data: [2] } } } }] } },
        { delete_vectors: { points_selector: { points: { ids: [{ num: 1 }] } }, vectors: { names: ['img'] } } },
      ],
    }).body;
    expect(b).toEqual({
      operations: [
        { upsert: { points: [{ id: 1, vector: [1], payload: {} }] } },
        { delete: { points: [2] } },
        { set_payload: { payload: { a: 1 }, filter: {}, key: 'x' } },
        { overwrite_payload: { payload: {}, points: [1] } },
        { delete_payload: { keys: ['a'], points: [1] } },
        { clear_payload: { points: [1] } },
        { update_vectors: { points: [{ id: 1, vector: [2] }] } },
        { delete_vectors: { points: [1], vector: ['img'] } },
      ],
    });
  });
});

describe('u64 beyond 2^53 in requests', () => {
  it('reaches REST exactly: point ids, has_id, integer matches, payload values', () => {
    expect(rest('qdrant.PointId', { num: '18446744073709551615' })).toBe(18446744073709551615n);
    expect(rest('qdrant.PointId', { num: 7 })).toBe(7);
    const f = rest('qdrant.Filter', {
      must: [
        { has_id: { has_id: [{ num: '424242424242424242' }] } },
        { field: { key: 'k', match: { integer: '9007199254740993' } } },
      ],
    });
    expect(f).toEqual({ must: [{ has_id: [424242424242424242n] }, { key: 'k', match: { value: 9007199254740993n } }] });
    const p = request('qdrant.Points/Upsert', 'qdrant.UpsertPoints', {
      collection_name: 'c',
      points: [{ id: { num: '424242424242424242' }, vectors: { vector: { dense: { data: [1] } } }, payload: { n: { integer_value: '9007199254740993' } } }],
    });
    expect((p.body as { points: { id: unknown; payload: unknown }[] }).points[0]).toMatchObject({ id: 424242424242424242n, payload: { n: 9007199254740993n } });
  });
});
