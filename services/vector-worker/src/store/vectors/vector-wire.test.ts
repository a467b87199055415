/**
 * The float32 forms of vector-wire.ts against pgvector's own parsing, in Postgres: what the
 * hexadecimal literal and the binary COPY store must be exactly `Math.fround` of the input, read
 * back through pgvector's text output.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import type { DenseVector } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import { stageRows } from '../points/staging.ts';
import { TEST_DATABASE_URL } from '../test-support.ts';
import { vectorLiteral } from './vector-wire.ts';
import { NO_DELAY } from '../pg-socket.ts';

let sql: postgres.Sql;
beforeAll(() => {
  sql = postgres(TEST_DATABASE_URL, { onnotice: () => {}, max: 2, ...NO_DELAY });
});
afterAll(async () => {
  await sql.end();
});

const dense = (over: Partial<DenseVector> = {}): DenseVector => ({ name: '', column: 'v0', size: 0, distance: 'Dot', multi: false, datatype: 'float32', ...over });

/** pgvector's text output back to numbers. */
const parse = (text: string): number[] => JSON.parse(text) as number[];

/** Every element is the float32 nearest the input (the sign of zero included). */
function expectStored(text: string, input: readonly number[]): void {
  const got = parse(text);
  expect(got).toHaveLength(input.length);
  input.forEach((x, i) => {
    const want = Math.fround(x);
    if (!Object.is(Math.fround(got[i]!), want)) throw new Error(`element ${i}: ${x} stored as ${got[i]}, want ${want}`);
  });
}

/** Stage `vectors` (through the binary COPY, or as JSON), read each back as pgvector's text. */
async function staged(vectors: (number[] | number[][] | null)[], d: DenseVector, via: 'copy' | 'json'): Promise<(string | null)[]> {
  return (await sql.begin(async (tx) => {
    const staged = await stageRows(
      tx,
      [d],
      vectors.map((v, i) => ({ pid: String(i), uuid: false, payload: null, sparse: null, vectors: [v] })),
      via,
    );
    const cast = tx.unsafe(d.multi ? (d.datatype === 'float16' ? 'halfvec[]' : 'vector[]') : d.datatype === 'float16' ? 'halfvec' : 'vector');
    const rows = await tx<{ v: string | null }[]>`select (x.${staged.column(0)}::${cast})::text as v from ${staged.table} order by x.s_ord`;
    return rows.map((r) => r.v);
  })) as (string | null)[];
}

const literal = async (v: number[], type = 'vector') => (await sql<{ v: string }[]>`select (${vectorLiteral(v, type === 'halfvec')}::${sql.unsafe(type)})::text as v`)[0]!.v;

let seed = 7;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;

const EDGES = [
  0,
  -0,
  1,
  -1,
  0.1,
  1 / 3,
  -2.5,
  1e-40, // subnormal float32
  -1e-45, // rounds to the smallest subnormal
  1.401298464324817e-45, // the smallest subnormal itself
  1.1754943508222875e-38, // the smallest normal
  3.4028234663852886e38, // the largest float32
  1e-50, // below every subnormal: 0
  123456789.123,
  1 + 2 ** -24, // exactly halfway between two float32s: ties to even (1), as Qdrant's f64 → f32 cast
];

describe('vectorLiteral (hexadecimal text parameters)', () => {
  it('pgvector reads exactly Math.fround of each element, -0, subnormals and ties included', async () => {
    expectStored(await literal(EDGES), EDGES);
    const text = await literal(EDGES);
    expect(parse(text)[1]).toBe(-0);
    expect(Object.is(parse(text)[1], -0)).toBe(true);
    expect(parse(text)[14]).toBe(1); // not 1.0000001, what the shortest decimal of the double gave
  });

  it('random vectors round-trip like pgvector parsing the float32 decimals', async () => {
    const v = Array.from({ length: 384 }, () => rnd() * 10 ** Math.round(rnd() * 6));
    const text = await literal(v);
    expectStored(text, v);
    // The same as pgvector's own text input of the float32 values written as decimals.
    const decimal = (await sql<{ v: string }[]>`select (${`[${v.map((x) => Math.fround(x)).join(',')}]`}::vector)::text as v`)[0]!.v;
    expect(text).toBe(decimal);
  });

  it('1 and 16,000 dimensions', async () => {
    expectStored(await literal([0.5]), [0.5]);
    const big = Array.from({ length: 16000 }, (_, i) => Math.sin(i) * 1e3);
    expectStored(await literal(big), big);
  });

  it('halfvec: rounded by pgvector as from its own text', async () => {
    // biome-ignore lint/suspicious/noApproximativeNumericConstant: a value with many digits for halfvec to round, not π.
    const v = [0.1, 65504, -3.14159, 6e-8];
    const viaHex = await literal(v, 'halfvec');
    const viaDecimal = (await sql<{ v: string }[]>`select (${`[${v.join(',')}]`}::halfvec)::text as v`)[0]!.v;
    expect(viaHex).toBe(viaDecimal);
  });

  it('a multivector is an array literal of vectors', async () => {
    const rows = [
      [1, -0, 0.25],
      [1e-40, 2, 3],
    ];
    const text = (await sql<{ v: string[] }[]>`select ${vectorLiteral(rows)}::vector[] as v`)[0]!.v;
    expect(text).toHaveLength(2);
    const arr = (await sql<{ v: string }[]>`select (${vectorLiteral(rows)}::vector[])::text as v`)[0]!.v;
    expect(arr).toBe('{"[1,-0,0.25]","[1e-40,2,3]"}');
  });

  it('NaN, infinities and float32 overflow are refused with the wording Postgres gave (400)', () => {
    const refused = (v: number[], half = false) => {
      try {
        vectorLiteral(v, half);
      } catch (err) {
        expect(err).toBeInstanceOf(QdrantError);
        expect((err as QdrantError).status).toBe(400);
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused([1, Number.NaN])).toBe('Wrong input: NaN not allowed in vector');
    expect(refused([Number.POSITIVE_INFINITY])).toBe('Wrong input: "Infinity" is out of range for type vector');
    expect(refused([1e39])).toBe('Wrong input: "1e+39" is out of range for type vector');
    expect(refused([-3.5e38])).toBe('Wrong input: "-3.5e+38" is out of range for type vector');
    expect(refused([70000], true)).toBe('Wrong input: "70000" is out of range for type halfvec');
    expect(refused([65520], true)).toBe('Wrong input: "65520" is out of range for type halfvec');
    expect(vectorLiteral([65519], true)).toBe('[0x1.ffde00p15]');
  });
});

describe.each(['copy', 'json'] as const)('stageRows via %s', (via) => {
  const viaCopy = (vectors: (number[] | number[][] | null)[], d: DenseVector) => staged(vectors, d, via);

  it('vectors arrive as Math.fround of each element, nulls as null, in order', async () => {
    const random = Array.from({ length: 384 }, () => rnd());
    const out = await viaCopy([EDGES, null, random, [0.5]], dense());
    expectStored(out[0]!, EDGES);
    expect(Object.is(parse(out[0]!)[1], -0)).toBe(true);
    expect(out[1]).toBeNull();
    expectStored(out[2]!, random);
    // The binary form stores what the hexadecimal text does.
    expect(out[2]).toBe(await literal(random));
    expectStored(out[3]!, [0.5]);
  });

  it('16,000 dimensions', async () => {
    const big = Array.from({ length: 16000 }, (_, i) => Math.cos(i) / (i + 1));
    const [out] = await viaCopy([big], dense());
    expectStored(out!, big);
  });

  it('halfvec columns: the float32 staged, cast by pgvector as from its own text', async () => {
    // biome-ignore lint/suspicious/noApproximativeNumericConstant: a value with many digits for halfvec to round, not π.
    const v = [0.1, 65504, -3.14159, 6e-8];
    const [out] = await viaCopy([v], dense({ datatype: 'float16' }));
    expect(out).toBe((await sql<{ v: string }[]>`select (${`[${v.join(',')}]`}::halfvec)::text as v`)[0]!.v);
  });

  it('multivectors stage as exact literals', async () => {
    const [out] = await viaCopy([[[1, -0], [0.1, 1e-40]]], dense({ multi: true }));
    expect(out).toBe('{"[1,-0]","[0.1,1e-40]"}');
  });

  it('NaN and overflow are refused before anything is sent', async () => {
    await expect(viaCopy([[1, Number.NaN]], dense())).rejects.toThrow('NaN not allowed in vector');
    await expect(viaCopy([[1e39]], dense())).rejects.toThrow('"1e+39" is out of range for type vector');
    await expect(viaCopy([[1e5]], dense({ datatype: 'float16' }))).rejects.toThrow('"100000" is out of range for type halfvec');
  });

  it('two stagings in one transaction each read only their own rows', async () => {
    const d = dense();
    const got = (await sql.begin(async (tx) => {
      const a = await stageRows(tx, [d], [{ pid: '1', uuid: false, payload: '{"a":1}', sparse: null, vectors: [[1]] }], via);
      const b = await stageRows(tx, [d], [{ pid: '0b5e1f1c-8a60-4e0c-a7f1-000000000002', uuid: true, payload: null, sparse: '{"s":{"indices":[1],"values":[2]}}', vectors: [[2]] }], via);
      const ra = await tx`select s_num, s_uuid, s_payload, s_sparse, s_c0::vector::text as v from ${a.table}`;
      const rb = await tx`select s_num, s_uuid, s_payload, s_sparse, s_c0::vector::text as v from ${b.table}`;
      return [ra, rb];
    })) as unknown as postgres.Row[][];
    expect(got[0]).toEqual([{ s_num: '1', s_uuid: null, s_payload: { a: 1 }, s_sparse: null, v: '[1]' }]);
    expect(got[1]).toEqual([{ s_num: null, s_uuid: '0b5e1f1c-8a60-4e0c-a7f1-000000000002', s_payload: null, s_sparse: { s: { indices: [1], values: [2] } }, v: '[2]' }]);
  });
});
