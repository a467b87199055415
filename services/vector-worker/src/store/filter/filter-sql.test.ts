import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QdrantError } from '../errors.ts';
import { compileFilter, type FilterContext } from './filter-sql.ts';
import { parseKeyPath, strictJsonPath } from './key-path.ts';
import { normalizeDatetime } from './range.ts';
import { formatPointId, idColumns, idOrder, parsePointId } from '../points/ids.ts';

const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';
const schema = `filter_sql_test_${process.pid}_${Date.now()}`;
const sql = postgres(url, { max: 2, onnotice: () => {} });

const U1 = '00000000-0000-4000-8000-000000000001';
const U2 = '00000000-0000-4000-8000-000000000002';
const U3 = '00000000-0000-4000-8000-000000000003';

type Id = number | bigint | string;
/** [id, payload as JSON text (kept verbatim, e.g. `1.0`), has v0, has v1 ("img")] */
const POINTS: [Id, string | null, boolean, boolean][] = [
  // Qdrant's basic_collection_setup (tests/openapi/helpers/collection_setup.py)
  [1, '{"city": "Berlin", "price": 10.0}', true, false],
  [2, '{"city": ["Berlin", "London"], "price": 11.0}', true, false],
  [3, '{"city": ["Berlin", "Moscow"], "price": 9.5}', true, false],
  [4, '{"city": ["London", "Moscow"], "price": 9}', true, false],
  [5, '{"count": 0}', true, false],
  [6, null, true, false],
  [7, '{"city": null, "price": null}', true, false],
  [8, '{"city": [], "price": []}', true, false],
  [9, null, false, false],
  [10, '{"city": [], "price": []}', false, false],
  // more shapes
  [
    11,
    '{"count": 3, "tags": ["a", "b", "c"], "nested": {"k": "v", "deep": {"x": 1}}, "created": "2024-01-15T10:00:00Z", "desc": "The quick brown Fox", "loc": {"lon": 13.404954, "lat": 52.520008}}',
    false,
    true,
  ],
  [
    12,
    '{"count": 7, "tags": "a", "nested": {"k": "w"}, "created": "2024-03-01 12:00:00", "desc": "quick-fox jumps", "loc": [{"lon": 2.3522, "lat": 48.8566}, {"lon": 13.41, "lat": 52.52}]}',
    false,
    false,
  ],
  [
    13,
    `{"arr": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}], "created": "2024-02-30T00:00:00Z", "weird key": "W", "a.b": "dot", "it's": "quote", "desc": "QUICK", "count": 1}`,
    false,
    false,
  ],
  [14, '{"arr": [{"x": 1, "y": "b"}, {"x": 3, "y": "a"}], "created": "2023-12-31", "n": [1, [2]], "mixed": [1, "1", true, null]}', false, false],
  [15, '{"arr": [[{"x": 1}]], "counts": [1.5, 2], "int_as_float": 1.0}', false, false],
  [16, '{"flag": true, "loc": {"lon": 179, "lat": 0}}', false, false],
  [U1, `{"city": "London", "inj": "'; drop table x; --", "n": null}`, true, false],
  [
    U2,
    '{"city": ["Paris"], "country": {"cities": [{"name": "Lyon", "pop": 500}, {"name": "Nice", "pop": 300}]}, "created": "2024-01-15T11:00:00+01:00"}',
    false,
    true,
  ],
  [U3, '{"country": {"cities": [{"name": "Lyon", "pop": 100}, {"name": "Paris", "pop": 2000}]}}', false, false],
];
const ALL: Id[] = POINTS.map((p) => p[0]);
const except = (...xs: Id[]) => ALL.filter((x) => !xs.includes(x));

const baseCtx: FilterContext = { vectorColumns: { '': 'v0', img: 'v1' } };

async function ids(filter: unknown, ctx: Partial<FilterContext> = {}): Promise<Id[]> {
  const where = compileFilter(sql, filter, { ...baseCtx, ...ctx });
  const rows = await sql<{ id_num: string | null; id_uuid: string | null }[]>`
    select id_num, id_uuid from ${sql(schema)}.pts where ${where} order by ${idOrder(sql)}`;
  return rows.map(formatPointId);
}

const m = (key: string, match: unknown) => ({ key, match });
const mv = (key: string, value: unknown) => m(key, { value });

function compileError(filter: unknown, ctx: Partial<FilterContext> = {}): QdrantError {
  try {
    compileFilter(sql, filter, { ...baseCtx, ...ctx });
  } catch (e) {
    if (e instanceof QdrantError) return e;
    throw e;
  }
  throw new Error('expected a QdrantError');
}

beforeAll(async () => {
  await sql.unsafe(`create schema ${schema}`);
  await sql.unsafe(`create table ${schema}.pts (
    id_num numeric(20,0), id_uuid uuid,
    pid text generated always as (coalesce(id_num::text, id_uuid::text)) stored primary key,
    payload jsonb not null default '{}',
    version bigint not null default 0,
    v0 public.vector(4), v1 public.vector(2),
    check ((id_num is null) <> (id_uuid is null)))`);
  await sql.unsafe(`create index on ${schema}.pts using gin (payload jsonb_path_ops)`);
  for (const [id, payload, hasV0, hasV1] of POINTS) {
    const c = idColumns(parsePointId(id));
    await sql`insert into ${sql(schema)}.pts (id_num, id_uuid, payload, v0, v1) values (
      ${c.id_num}, ${c.id_uuid}, ${payload ?? '{}'}::text::jsonb,
      ${hasV0 ? '[1,2,3,4]' : null}::public.vector, ${hasV1 ? '[1,2]' : null}::public.vector)`;
  }
});

afterAll(async () => {
  await sql.unsafe(`drop schema if exists ${schema} cascade`);
  await sql.end();
});

describe('boolean structure', () => {
  it('null, undefined and {} match everything', async () => {
    expect(await ids(null)).toEqual(ALL);
    expect(await ids(undefined)).toEqual(ALL);
    expect(await ids({})).toEqual(ALL);
  });

  it('should London OR Berlin (test_count.py: 4 on the basic data set)', async () => {
    const f = { should: [mv('city', 'London'), mv('city', 'Berlin')] };
    expect(await ids(f)).toEqual([1, 2, 3, 4, U1]);
    const [row] = await sql<{ n: string }[]>`select count(*) as n from ${sql(schema)}.pts
      where id_num <= 10 and ${compileFilter(sql, f, baseCtx)}`;
    expect(Number(row!.n)).toBe(4);
  });

  it('must is AND, must_not is NOT a AND NOT b, single condition or list', async () => {
    expect(await ids({ must: mv('city', 'Berlin') })).toEqual([1, 2, 3]);
    expect(await ids({ must: [mv('city', 'Berlin'), mv('city', 'London')] })).toEqual([2]);
    expect(await ids({ must_not: [mv('city', 'Berlin'), mv('city', 'London')] })).toEqual(except(1, 2, 3, 4, U1));
    expect(await ids({ must_not: mv('city', 'Berlin') })).toEqual(except(1, 2, 3));
  });

  it('empty lists: must [] / must_not [] / should [] are all true', async () => {
    expect(await ids({ must: [], must_not: [], should: [] })).toEqual(ALL);
  });

  it('nested Filter as a condition', async () => {
    const f = {
      must: [{ should: [mv('city', 'Moscow'), mv('city', 'Paris')] }, { must_not: [mv('city', 'Berlin')] }],
    };
    expect(await ids(f)).toEqual([4, U2]);
  });

  it('min_should counts satisfied conditions', async () => {
    const conditions = [mv('city', 'Berlin'), mv('city', 'London'), { key: 'price', range: { gte: 10 } }];
    expect(await ids({ min_should: { conditions, min_count: 2 } })).toEqual([1, 2]);
    expect(await ids({ min_should: { conditions, min_count: 3 } })).toEqual([2]);
    expect(await ids({ min_should: { conditions, min_count: 1 } })).toEqual([1, 2, 3, 4, U1]);
    expect(await ids({ min_should: { conditions, min_count: 0 } })).toEqual(ALL);
    expect(await ids({ min_should: { conditions, min_count: 4 } })).toEqual([]);
    expect(await ids({ min_should: { conditions: [], min_count: 1 } })).toEqual(ALL);
    expect(await ids({ must: [mv('city', 'Moscow')], min_should: { conditions, min_count: 1 } })).toEqual([3, 4]);
  });
});

describe('match', () => {
  it('value: strings, any array element, ints, bools', async () => {
    expect(await ids({ must: [mv('city', 'Berlin')] })).toEqual([1, 2, 3]);
    expect(await ids({ must: [mv('count', 0)] })).toEqual([5]);
    expect(await ids({ must: [mv('count', 1)] })).toEqual([13]);
    expect(await ids({ must: [mv('flag', true)] })).toEqual([16]);
    expect(await ids({ must: [mv('flag', 'true')] })).toEqual([]);
    expect(await ids({ must: [mv('count', '0')] })).toEqual([]);
    expect(await ids({ must: [mv('mixed', '1')] })).toEqual([14]);
    expect(await ids({ must: [mv('mixed', 1)] })).toEqual([14]);
    expect(await ids({ must: [mv('mixed', true)] })).toEqual([14]);
  });

  it('value: arrays are flattened one level only', async () => {
    expect(await ids({ must: [mv('n', 1)] })).toEqual([14]);
    expect(await ids({ must: [mv('n', 2)] })).toEqual([]); // [1, [2]]: [2] is not 2
    expect(await ids({ must: [mv('n[]', 2)] })).toEqual([14]); // n[] reaches [2], which is flattened
  });

  it('value: jsonb compares numbers numerically (stored 1.0 matches 1; documented difference)', async () => {
    expect(await ids({ must: [mv('int_as_float', 1)] })).toEqual([15]);
  });

  it('any (test_filter.py: London or Moscow → 2, 3, 4)', async () => {
    expect(await ids({ must: [m('city', { any: ['London', 'Moscow'] })] })).toEqual([2, 3, 4, U1]);
    expect(await ids({ must: [m('count', { any: [0, 7] })] })).toEqual([5, 12]);
    expect(await ids({ must: [m('count', { any: ['0'] })] })).toEqual([]);
  });

  it('any: many values (list parameter instead of containment)', async () => {
    const many = Array.from({ length: 100 }, (_, i) => `c${i}`).concat(['Moscow']);
    expect(await ids({ must: [m('city', { any: many })] })).toEqual([3, 4]);
    expect(await ids({ must: [m('arr[0].y', { any: many.concat('b') })] })).toEqual([14]);
  });

  it('any: [] matches nothing, and must_not of it matches everything (test_match_any_empty.py)', async () => {
    expect(await ids({ must: [m('city', { any: [] })] })).toEqual([]);
    expect(await ids({ must: [m('count', { any: [] })] })).toEqual([]);
    expect(await ids({ must_not: [m('count', { any: [] })] })).toEqual(ALL);
  });

  it('except: some element not in the list; missing, null and [] never match', async () => {
    expect(await ids({ must: [m('city', { except: ['Berlin'] })] })).toEqual([2, 3, 4, U1, U2]);
    expect(await ids({ must: [m('city', { except: ['Berlin', 'London', 'Moscow'] })] })).toEqual([U2]);
    expect(await ids({ must: [m('city', { except: [] })] })).toEqual([1, 2, 3, 4, U1, U2]);
    expect(await ids({ must: [m('count', { except: [1] })] })).toEqual([5, 11, 12]);
    // a value of the other type counts as "not in the list"
    expect(await ids({ must: [m('city', { except: [1] })] })).toEqual([1, 2, 3, 4, U1, U2]);
    // [1, "1", true, null]: 1 is not a string → matches
    expect(await ids({ must: [m('mixed', { except: ['1'] })] })).toEqual([14]);
    expect(await ids({ must_not: [m('city', { except: ['Berlin'] })] })).toEqual(except(2, 3, 4, U1, U2));
  });

  it('text without an index: case-sensitive substring', async () => {
    expect(await ids({ must: [m('desc', { text: 'quick' })] })).toEqual([11, 12]);
    expect(await ids({ must: [m('desc', { text: 'QUICK' })] })).toEqual([13]);
    expect(await ids({ must: [m('desc', { text: '' })] })).toEqual([11, 12, 13]);
    expect(await ids({ must: [m('desc', { text: '%' })] })).toEqual([]);
    expect(await ids({ must: [m('desc', { text: 'qu_ck' })] })).toEqual([]);
    expect(await ids({ must: [m('city', { text: 'erl' })] })).toEqual([1, 2, 3]);
  });

  it('text_any and phrase without an index', async () => {
    expect(await ids({ must: [m('desc', { text_any: 'Fox jumps' })] })).toEqual([11, 12]);
    expect(await ids({ must: [m('desc', { text_any: 'fox' })] })).toEqual([12]);
    expect(await ids({ must: [m('desc', { text_any: '   ' })] })).toEqual([]);
    expect(await ids({ must: [m('desc', { phrase: 'quick-fox' })] })).toEqual([12]);
  });

  it('text, text_any, phrase with a full-text index: lower-cased word tokens', async () => {
    const ctx = { textIndexed: (k: string) => k === 'desc' };
    expect(await ids({ must: [m('desc', { text: 'Quick fox' })] }, ctx)).toEqual([11, 12]);
    expect(await ids({ must: [m('desc', { text: 'quick brown' })] }, ctx)).toEqual([11]);
    expect(await ids({ must: [m('desc', { text: 'quick' })] }, ctx)).toEqual([11, 12, 13]);
    expect(await ids({ must: [m('desc', { text: 'qui' })] }, ctx)).toEqual([]);
    expect(await ids({ must: [m('desc', { text: '!!!' })] }, ctx)).toEqual([]);
    expect(await ids({ must: [m('desc', { text_any: 'brown jumps' })] }, ctx)).toEqual([11, 12]);
    expect(await ids({ must: [m('desc', { phrase: 'quick fox' })] }, ctx)).toEqual([12]);
    expect(await ids({ must: [m('desc', { phrase: 'Brown FOX' })] }, ctx)).toEqual([11]);
    expect(await ids({ must: [m('desc', { phrase: 'fox quick' })] }, ctx)).toEqual([]);
  });
});

describe('range and values_count', () => {
  it('numeric range over ints, floats and arrays', async () => {
    expect(await ids({ must: [{ key: 'price', range: { gte: 10 } }] })).toEqual([1, 2]);
    expect(await ids({ must: [{ key: 'price', range: { lt: 9.5 } }] })).toEqual([4]);
    expect(await ids({ must: [{ key: 'price', range: { gt: 9, lte: 10.0 } }] })).toEqual([1, 3]);
    expect(await ids({ must: [{ key: 'count', range: { gt: 2 } }] })).toEqual([11, 12]);
    expect(await ids({ must: [{ key: 'count', range: { lt: 0.5 } }] })).toEqual([5]);
    expect(await ids({ must: [{ key: 'counts', range: { gt: 1.9, lt: 2.1 } }] })).toEqual([15]);
    expect(await ids({ must: [{ key: 'price', range: {} }] })).toEqual([1, 2, 3, 4]);
    expect(await ids({ must: [{ key: 'price', range: { gt: null, lt: 9.1 } }] })).toEqual([4]);
    // strings never satisfy a numeric range
    expect(await ids({ must: [{ key: 'city', range: { gt: 0 } }] })).toEqual([]);
  });

  it('datetime range: RFC 3339, naive (UTC) and date-only values; unparsable stored values never match', async () => {
    const r = (range: unknown) => ids({ must: [{ key: 'created', range }] });
    expect(await r({ gte: '2024-01-15T10:30:00Z' })).toEqual([12]);
    expect(await r({ gte: '2024-01-15T10:00:00Z', lte: '2024-01-15T10:00:00Z' })).toEqual([11, U2]);
    expect(await r({ lt: '2024-01-01' })).toEqual([14]);
    expect(await r({ gt: '2024-01-15T09:59:59.999+0000' })).toEqual([11, 12, U2]);
    expect(await r({ gt: '2024-01-15 10:59:59+01' })).toEqual([11, 12, U2]);
    expect(await r({ gt: '2000-01-01T00:00' })).toEqual([11, 12, 14, U2]); // 13 has Feb 30
  });

  it('normalizeDatetime', () => {
    expect(normalizeDatetime('2024-01-15T10:00:00Z')).toBe('2024-01-15T10:00:00+00:00');
    expect(normalizeDatetime('2024-01-15t10:00:00.1234567z')).toBe('2024-01-15T10:00:00.123456+00:00');
    expect(normalizeDatetime('2024-01-15 10:00')).toBe('2024-01-15T10:00:00+00:00');
    expect(normalizeDatetime('2024-01-15')).toBe('2024-01-15T00:00:00+00:00');
    expect(normalizeDatetime('2024-01-15T10:00:00-0530')).toBe('2024-01-15T10:00:00-05:30');
    expect(normalizeDatetime('2024-02-29')).toBe('2024-02-29T00:00:00+00:00');
    for (const bad of ['2023-02-29', '2024-13-01', '2024-01-15T24:00:00Z', 'yesterday', '2024-01-15T10Z', '15/01/2024']) {
      expect(normalizeDatetime(bad), bad).toBeNull();
    }
  });

  it('values_count: arrays count their length, scalars 1, null/missing 0', async () => {
    const vc = (key: string, values_count: unknown) => ids({ must: [{ key, values_count }] });
    expect(await vc('tags', { gte: 2 })).toEqual([11]);
    expect(await vc('tags', { lt: 1 })).toEqual(except(11, 12));
    expect(await vc('tags', { gte: 1, lte: 1 })).toEqual([12]);
    expect(await vc('city', { gt: 1 })).toEqual([2, 3, 4]);
    expect(await vc('city', { lt: 2 })).toEqual(except(2, 3, 4));
    expect(await vc('arr[].x', { gte: 1 })).toEqual([13, 14]);
  });
});

describe('is_empty / is_null', () => {
  it('is_empty: missing, null or []', async () => {
    expect(await ids({ must: [{ is_empty: { key: 'city' } }] })).toEqual(except(1, 2, 3, 4, U1, U2));
    expect(await ids({ must: [{ is_empty: { key: 'price' } }] })).toEqual(except(1, 2, 3, 4));
    expect(await ids({ must_not: [{ is_empty: { key: 'city' } }] })).toEqual([1, 2, 3, 4, U1, U2]);
    // [1, "1", true, null] is not empty
    expect(await ids({ must: [{ is_empty: { key: 'mixed' } }] })).toEqual(except(14));
    // through arrays: 15's arr holds arrays, so arr[].x reaches nothing
    expect(await ids({ must: [{ is_empty: { key: 'arr[].x' } }] })).toEqual(except(13, 14));
  });

  it('is_null: explicit null only (not missing, not [], not [null])', async () => {
    expect(await ids({ must: [{ is_null: { key: 'city' } }] })).toEqual([7]);
    expect(await ids({ must: [{ is_null: { key: 'n' } }] })).toEqual([U1]);
    expect(await ids({ must: [{ is_null: { key: 'mixed' } }] })).toEqual([]);
    expect(await ids({ must_not: [{ is_null: { key: 'city' } }] })).toEqual(except(7));
  });

  it('FieldCondition is_empty / is_null flags', async () => {
    expect(await ids({ must: [{ key: 'city', is_empty: true }] })).toEqual(except(1, 2, 3, 4, U1, U2));
    expect(await ids({ must: [{ key: 'city', is_empty: false }] })).toEqual([1, 2, 3, 4, U1, U2]);
    expect(await ids({ must: [{ key: 'mixed', is_null: true }] })).toEqual([14]);
    expect(await ids({ must: [{ key: 'city', is_null: true }] })).toEqual([7]);
    expect(await ids({ must: [{ key: 'city', is_null: false }] })).toEqual(except(7));
  });
});

describe('key paths', () => {
  it('object paths', async () => {
    expect(await ids({ must: [mv('nested.k', 'v')] })).toEqual([11]);
    expect(await ids({ must: [mv('nested.deep.x', 1)] })).toEqual([11]);
    expect(await ids({ must: [m('nested.deep.x', { any: [1, 2] })] })).toEqual([11]);
    expect(await ids({ must: [mv('nested.deep', 1)] })).toEqual([]);
  });

  it('arr[].x, arr[], arr[n] and strict traversal (no implicit unwrapping)', async () => {
    expect(await ids({ must: [mv('arr[].x', 3)] })).toEqual([14]);
    expect(await ids({ must: [m('arr[].x', { any: [1] })] })).toEqual([13, 14]);
    expect(await ids({ must: [mv('arr.x', 1)] })).toEqual([]); // Qdrant needs arr[].x
    expect(await ids({ must: [mv('arr[][].x', 1)] })).toEqual([15]);
    expect(await ids({ must: [mv('arr[0].y', 'b')] })).toEqual([14]);
    expect(await ids({ must: [mv('arr[1].y', 'b')] })).toEqual([13]);
    expect(await ids({ must: [mv('arr[5].y', 'b')] })).toEqual([]);
    expect(await ids({ must: [mv('tags[]', 'b')] })).toEqual([11]);
    expect(await ids({ must: [mv('tags', 'a')] })).toEqual([11, 12]);
    expect(await ids({ must: [mv('tags[]', 'a')] })).toEqual([11]); // "a" is not an array
    expect(await ids({ must: [mv('country.cities[].name', 'Paris')] })).toEqual([U3]);
    expect(await ids({ must: [{ key: 'arr[].x', range: { gt: 2 } }] })).toEqual([14]);
    expect(await ids({ must: [{ key: 'arr[1].x', range: { gt: 1 } }] })).toEqual([13, 14]);
  });

  it('quoted keys: spaces, dots, quotes', async () => {
    expect(await ids({ must: [mv('"weird key"', 'W')] })).toEqual([13]);
    expect(await ids({ must: [mv('"a.b"', 'dot')] })).toEqual([13]);
    expect(await ids({ must: [mv('a.b', 'dot')] })).toEqual([]);
    expect(await ids({ must: [mv(`"it's"`, 'quote')] })).toEqual([13]);
    expect(await ids({ must: [m(`"it's"`, { text: 'uot' })] })).toEqual([13]);
    expect(await ids({ must: [{ is_empty: { key: '"weird key"' } }] })).toEqual(except(13));
  });

  it('parseKeyPath / strictJsonPath', () => {
    expect(parseKeyPath('a.b[].c[2]."d.e"')).toEqual([{ key: 'a' }, { key: 'b' }, { wildcard: true }, { key: 'c' }, { index: 2 }, { key: 'd.e' }]);
    expect(parseKeyPath('"x y"')).toEqual([{ key: 'x y' }]);
    expect(parseKeyPath('ünï-cødé_1')).toEqual([{ key: 'ünï-cødé_1' }]);
    for (const bad of ['', 'a..b', 'a.', '.a', 'a[x]', 'a[', 'a b', '"a', '"a\\"b"', 'a[-1]', '[0]', 'a"b"']) {
      expect(parseKeyPath(bad), bad).toBeNull();
    }
    expect(strictJsonPath([{ key: 'a"b' }])).toBe('strict $ ? (@.type() == "object" && exists(@."a\\"b"))."a\\"b"');
  });
});

describe('nested', () => {
  it('each element must satisfy the inner filter on its own', async () => {
    const inner = { must: [mv('name', 'Lyon'), { key: 'pop', range: { gt: 400 } }] };
    expect(await ids({ must: [{ nested: { key: 'country.cities', filter: inner } }] })).toEqual([U2]);
    // without nested, conditions may be met by different elements
    const flat = { must: [mv('country.cities[].name', 'Lyon'), { key: 'country.cities[].pop', range: { gt: 400 } }] };
    expect(await ids(flat)).toEqual([U2, U3]);
    expect(await ids({ must: [{ nested: { key: 'arr', filter: { must: [mv('x', 1), mv('y', 'a')] } } }] })).toEqual([13]);
    expect(await ids({ must: [{ nested: { key: 'arr[]', filter: { must: [mv('x', 1), mv('y', 'a')] } } }] })).toEqual([13]);
    expect(await ids({ must: [mv('arr[].x', 1), mv('arr[].y', 'a')] })).toEqual([13, 14]);
  });

  it('must_not / should / {} inside nested; only object elements count', async () => {
    const n = (filter: unknown) => ({ nested: { key: 'arr', filter } });
    expect(await ids({ must: [n({ must_not: [mv('y', 'a')] })] })).toEqual([13, 14]);
    expect(await ids({ must: [n({ must: [mv('y', 'a')], must_not: [mv('x', 1)] })] })).toEqual([14]);
    expect(await ids({ must: [n({})] })).toEqual([13, 14]);
    expect(await ids({ must_not: [n({ must: [mv('y', 'a'), mv('x', 1)] })] })).toEqual(except(13));
  });

  it('has_id / has_vector are false inside nested (vector names still checked)', async () => {
    expect(await ids({ must: [{ nested: { key: 'arr', filter: { must: [{ has_id: [13, 14] }] } } }] })).toEqual([]);
    expect(await ids({ must: [{ nested: { key: 'arr', filter: { must: [{ has_vector: '' }] } } }] })).toEqual([]);
    expect(compileError({ must: [{ nested: { key: 'arr', filter: { must: [{ has_vector: 'nope' }] } } }] }).status).toBe(400);
  });
});

describe('ids and vectors', () => {
  it('has_id with mixed numeric and UUID ids in any accepted form', async () => {
    expect(await ids({ must: [{ has_id: [1, U1.toUpperCase(), U2.replaceAll('-', ''), 999] }] })).toEqual([1, U1, U2]);
    expect(await ids({ must: [{ has_id: [] }] })).toEqual([]);
    // NULL-safe under must_not (UUID rows have NULL id_num)
    expect(await ids({ must_not: [{ has_id: [1, U1] }] })).toEqual(except(1, U1));
    expect(await ids({ must_not: [{ has_id: [U3] }] })).toEqual(except(U3));
  });

  it('has_vector', async () => {
    expect(await ids({ must: [{ has_vector: '' }] })).toEqual([1, 2, 3, 4, 5, 6, 7, 8, U1]);
    expect(await ids({ must: [{ has_vector: 'img' }] })).toEqual([11, U2]);
    expect(await ids({ must_not: [{ has_vector: 'img' }] })).toEqual(except(11, U2));
  });

  it('table alias qualifies every column', async () => {
    const f = { must: [{ has_id: [1, 2, 11, U2] }, { has_vector: 'img' }, { should: [mv('count', 3), mv('city', 'Paris')] }] };
    const where = compileFilter(sql, f, { ...baseCtx, alias: 't' });
    const rows = await sql<{ id_num: string | null; id_uuid: string | null }[]>`
      select t.id_num, t.id_uuid from ${sql(schema)}.pts t cross join (select 1 as payload, 2 as v1) other
      where ${where} order by t.id_num, t.id_uuid`;
    expect(rows.map(formatPointId)).toEqual([11, U2]);
  });
});

describe('geo', () => {
  it('geo_radius (haversine, metres) over objects and arrays of objects', async () => {
    const center = { lon: 13.405, lat: 52.52 };
    expect(await ids({ must: [{ key: 'loc', geo_radius: { center, radius: 1000 } }] })).toEqual([11, 12]);
    expect(await ids({ must: [{ key: 'loc', geo_radius: { center, radius: 10 } }] })).toEqual([11]);
  });

  it('geo_bounding_box, including a box across the antimeridian', async () => {
    const box = (top_left: unknown, bottom_right: unknown) => ids({ must: [{ key: 'loc', geo_bounding_box: { top_left, bottom_right } }] });
    expect(await box({ lon: 0, lat: 55 }, { lon: 10, lat: 45 })).toEqual([12]);
    expect(await box({ lon: 0, lat: 55 }, { lon: 20, lat: 45 })).toEqual([11, 12]);
    expect(await box({ lon: 170, lat: 10 }, { lon: -170, lat: -10 })).toEqual([16]);
  });

  it('geo_polygon with holes', async () => {
    const ring = (pts: [number, number][]) => ({ points: pts.map(([lon, lat]) => ({ lon, lat })) });
    // a triangle around Paris and Berlin (lon/lat), open to the south-west of Paris
    const tri = ring([[0, 47], [20, 50], [10, 56], [0, 47]]);
    const poly = (geo_polygon: unknown) => ids({ must: [{ key: 'loc', geo_polygon }] });
    expect(await poly({ exterior: tri })).toEqual([11, 12]);
    // a hole around Berlin leaves only Paris (12's second location)
    const hole = ring([[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]);
    expect(await poly({ exterior: tri, interiors: [hole] })).toEqual([12]);
    // a concave ring: the notch excludes Berlin's longitude band
    const notch = ring([[0, 40], [30, 40], [30, 60], [14, 60], [14, 45], [12, 45], [12, 60], [0, 60], [0, 40]]);
    expect(await poly({ exterior: notch })).toEqual([12]);
    expect(await poly({ exterior: ring([[170, -5], [-170, -5], [-170, 5], [170, 5], [170, -5]]) })).toEqual([]);
    expect(await poly({ exterior: ring([[178, -5], [180, -5], [180, 5], [178, 5], [178, -5]]) })).toEqual([16]);
  });
});

describe('values are never SQL or JSONPath text', () => {
  it('injection-looking values and keys are plain data', async () => {
    const evil = "'; drop table x; --";
    expect(await ids({ must: [mv('inj', evil)] })).toEqual([U1]);
    expect(await ids({ must: [m('inj', { any: [evil, '$'] })] })).toEqual([U1]);
    expect(await ids({ must: [m('inj', { text: "'; drop" })] })).toEqual([U1]);
    expect(await ids({ must: [m('inj', { except: [evil] })] })).toEqual([]);
    expect(await ids({ must: [mv(`"x'); drop table pts; --"`, evil)] })).toEqual([]);
    expect(await ids({ must: [mv('"$ ? (@ == 1)"', '") || true || ("')] })).toEqual([]);
    expect(await ids({ must: [{ key: 'created', range: { gt: '2024-01-01' } }, mv('inj', '\\"')] })).toEqual([]);
    const [row] = await sql<{ n: string }[]>`select count(*) as n from ${sql(schema)}.pts`;
    expect(Number(row!.n)).toBe(ALL.length);
  });
});

describe('errors', () => {
  it('422 for a condition with only a key (test_filter.py test_just_key)', () => {
    const e = compileError({ must: [{ key: 'city' }] });
    expect(e.status).toBe(422);
    expect(e.message).toBe('Validation error in JSON body: [filter.must[0]: At least one field condition must be specified]');
    const e2 = compileError({ should: [mv('city', 'x'), { key: 'a' }], must_not: { key: 'b' } }, { path: 'prefetch.filter' });
    expect(e2.status).toBe(422);
    expect(e2.message).toBe(
      'Validation error in JSON body: [prefetch.filter.should[1]: At least one field condition must be specified; prefetch.filter.must_not: At least one field condition must be specified]',
    );
  });

  it('400 for wrong shapes and types, before any 422', () => {
    const bad: unknown[] = [
      { must: [m('city', { value: {} })] },
      { must: [m('city', { value: 1.5 })] },
      { must: [m('city', { value: null })] },
      { must: [m('city', { any: ['a', 1] })] },
      { must: [m('city', { any: [true] })] },
      { must: [m('city', { except: 'a' })] },
      { must: [m('city', { text: 1 })] },
      { must: [m('city', { nope: 1 })] },
      { must: [m('city', 'Berlin')] },
      { must: [{ key: 'price', range: { gt: 'soon' } }] },
      { must: [{ key: 'price', range: { gt: 1, lt: '2024-01-01' } }] },
      { must: [{ key: 'price', range: { gt: true } }] },
      { must: [{ key: 'tags', values_count: { gt: -1 } }] },
      { must: [{ key: 'tags', values_count: { gt: 1.5 } }] },
      { must: [{ key: 'city', is_empty: 'yes' }] },
      { must: [{ key: 1, match: { value: 'x' } }] },
      { must: ['city'] },
      { must: [{ is_empty: 'city' }] },
      { must: [{ nested: { key: 'arr' } }] },
      { must: [{ has_id: 5 }] },
      { must: [{ has_vector: 1 }] },
      { must: [{ key: 'loc', geo_radius: { center: { lon: 200, lat: 0 }, radius: 1 } }] },
      { must: [{ key: 'loc', geo_radius: { center: { lon: 0, lat: 0 } } }] },
      { min_should: { conditions: [], min_count: -1 } },
      { min_should: { conditions: {}, min_count: 1 } },
      { foo: [] },
      'city',
      [],
      { must: [{ key: 'city' }, m('city', { value: {} })] },
    ];
    for (const f of bad) {
      const e = compileError(f);
      expect(e.status, JSON.stringify(f)).toBe(400);
      expect(e.message, JSON.stringify(f)).toMatch(/^Format error in JSON body: /);
    }
    expect(compileError({ must: [m('city', { value: {} })] }).message).toBe(
      'Format error in JSON body: filter.must[0].match: data did not match any variant of untagged enum Match',
    );
  });

  it('400 for invalid keys', () => {
    for (const key of ['', 'a..b', 'a[x]', '"open', 'a b']) {
      expect(compileError({ must: [mv(key, 1)] }).message).toBe(`Format error in JSON body: Invalid json path: '${key}'`);
    }
    expect(compileError({ must: [{ is_null: { key: 'a[' } }] }).message).toBe(`Format error in JSON body: Invalid json path: 'a['`);
  });

  it('400 for malformed polygons', () => {
    const open = { points: [{ lon: 0, lat: 0 }, { lon: 1, lat: 0 }, { lon: 1, lat: 1 }, { lon: 0, lat: 1 }] };
    const short = { points: [{ lon: 0, lat: 0 }, { lon: 1, lat: 0 }, { lon: 0, lat: 0 }] };
    expect(compileError({ must: [{ key: 'loc', geo_polygon: { exterior: open } }] }).message).toBe(
      'Format error in JSON body: filter.must[0].geo_polygon.exterior: polygon invalid, the first and the last points should be the same to form a closed line',
    );
    expect(compileError({ must: [{ key: 'loc', geo_polygon: { exterior: short } }] }).message).toBe(
      'Format error in JSON body: filter.must[0].geo_polygon.exterior: polygon invalid, the size must be at least 4, got 3',
    );
    expect(compileError({ must: [{ key: 'loc', geo_polygon: { exterior: open, interiors: {} } }] }).status).toBe(400);
  });

  it('400 with Qdrant wording for bad ids and unknown vectors', () => {
    const e = compileError({ must: [{ has_id: [1, 'not-an-id'] }] });
    expect(e.status).toBe(400);
    expect(e.message).toBe(
      'Format error in JSON body: value not-an-id is not a valid point ID, valid values are either an unsigned integer or a UUID',
    );
    const v = compileError({ must: [{ has_vector: 'nope' }] });
    expect(v.status).toBe(400);
    expect(v.message).toBe('Wrong input: Not existing vector name error: nope');
  });
});
