import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QdrantError } from '../errors.ts';
import {
  ID_ORDER,
  formatPointId,
  idAtOrAfter,
  idColumns,
  idIn,
  idOrder,
  parsePathPointId,
  parsePointId,
  parseUuid,
  pidOf,
  toWireId,
  type ParsedPointId,
} from './ids.ts';

const U = '5c56c793-69f3-4fbf-87e6-c4bf54c28c26';

function expectQdrantError(fn: () => unknown, status: number, message: string) {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(QdrantError);
  expect((err as QdrantError).status).toBe(status);
  expect((err as QdrantError).message).toBe(message);
}

const badId = (v: string) =>
  `Format error in JSON body: value ${v} is not a valid point ID, valid values are either an unsigned integer or a UUID`;

describe('parsePointId', () => {
  it('accepts non-negative integers', () => {
    expect(parsePointId(0)).toEqual({ num: '0' });
    expect(parsePointId(1)).toEqual({ num: '1' });
    expect(parsePointId(-0)).toEqual({ num: '0' });
    expect(parsePointId(Number.MAX_SAFE_INTEGER)).toEqual({ num: '9007199254740991' });
  });

  it('accepts integral doubles above 2^53 up to u64::MAX (the value JSON.parse produced)', () => {
    expect(parsePointId(JSON.parse('9007199254740993'))).toEqual({ num: '9007199254740992' });
    expect(parsePointId(JSON.parse('10000000000000000000'))).toEqual({ num: '10000000000000000000' });
    // u64::MAX itself rounds to 2^64 as a double: out of range
    expectQdrantError(() => parsePointId(JSON.parse('18446744073709551615')), 400, badId('18446744073709552000'));
  });

  it('accepts exact bigints in range', () => {
    expect(parsePointId(18446744073709551615n)).toEqual({ num: '18446744073709551615' });
    expectQdrantError(() => parsePointId(18446744073709551616n), 400, badId('18446744073709551616'));
    expectQdrantError(() => parsePointId(-1n), 400, badId('-1'));
  });

  it('rejects negative, fractional, non-finite, numeric strings and other types', () => {
    expectQdrantError(() => parsePointId(-1), 400, badId('-1'));
    expectQdrantError(() => parsePointId(1.5), 400, badId('1.5'));
    expectQdrantError(() => parsePointId(1e20), 400, badId('100000000000000000000'));
    expectQdrantError(() => parsePointId(Number.NaN), 400, badId('NaN'));
    expectQdrantError(() => parsePointId(Number.POSITIVE_INFINITY), 400, badId('Infinity'));
    expectQdrantError(() => parsePointId('1'), 400, badId('1'));
    expectQdrantError(() => parsePointId('art_92_en'), 400, badId('art_92_en'));
    expectQdrantError(() => parsePointId(''), 400, badId(''));
    expectQdrantError(() => parsePointId(null), 400, badId('null'));
    expectQdrantError(() => parsePointId(true), 400, badId('true'));
    expectQdrantError(() => parsePointId({ a: 1 }), 400, badId('{"a":1}'));
    expectQdrantError(() => parsePointId([1]), 400, badId('[1]'));
  });

  it('accepts every UUID form the Rust uuid crate parses, canonicalised', () => {
    const forms = [
      U,
      U.toUpperCase(),
      '5C56c793-69F3-4fbf-87e6-C4BF54c28c26',
      U.replaceAll('-', ''),
      U.replaceAll('-', '').toUpperCase(),
      `{${U}}`,
      `{${U.toUpperCase()}}`,
      `urn:uuid:${U}`,
      `urn:uuid:${U.toUpperCase()}`,
    ];
    for (const f of forms) expect(parsePointId(f), f).toEqual({ uuid: U });
    expect(parsePointId('00000000-0000-0000-0000-000000000000')).toEqual({ uuid: '00000000-0000-0000-0000-000000000000' });
  });

  it('rejects malformed UUIDs', () => {
    const bad = [
      U.slice(0, -1),
      `${U}0`,
      U.replace('5', 'g'),
      ` ${U}`,
      `${U} `,
      `{${U.replaceAll('-', '')}}`, // braces only around the hyphenated form
      `urn:uuid:${U.replaceAll('-', '')}`,
      `URN:UUID:${U}`, // the crate matches the prefix byte-wise
      `{${U}`,
      '5c56c79369f3-4fbf-87e6-c4bf54c28c26a',
      '5c56c793-69f34fbf-87e6-c4bf54c28c26-',
      'ctx-dfb7f5ad-6dca-40ce-aae3-1ca787edc27b',
    ];
    for (const b of bad) expectQdrantError(() => parsePointId(b), 400, badId(b));
  });
});

describe('parseUuid', () => {
  it('returns null rather than throwing', () => {
    expect(parseUuid('x')).toBeNull();
    expect(parseUuid(U.replaceAll('-', ''))).toBe(U);
  });
});

describe('parsePathPointId', () => {
  it('parses u64 digits (with Rust u64::from_str rules) then UUIDs', () => {
    expect(parsePathPointId('0')).toEqual({ num: '0' });
    expect(parsePathPointId('42')).toEqual({ num: '42' });
    expect(parsePathPointId('007')).toEqual({ num: '7' });
    expect(parsePathPointId('+5')).toEqual({ num: '5' });
    expect(parsePathPointId('18446744073709551615')).toEqual({ num: '18446744073709551615' });
    expect(parsePathPointId(U)).toEqual({ uuid: U });
    expect(parsePathPointId(U.replaceAll('-', '').toUpperCase())).toEqual({ uuid: U });
    expect(parsePathPointId(`{${U}}`)).toEqual({ uuid: U });
    expect(parsePathPointId(`urn:uuid:${U}`)).toEqual({ uuid: U });
  });

  it('rejects everything else with Qdrant wording', () => {
    for (const s of ['-1', '1.5', '18446744073709551616', 'abc', '', ' 1', '1e3', '++1', '0x10']) {
      expectQdrantError(() => parsePathPointId(s), 400, `Wrong input: Can not recognize "${s}" as point id`);
    }
  });
});

describe('formatting helpers', () => {
  it('formats rows', () => {
    expect(formatPointId({ id_num: '42', id_uuid: null })).toBe(42);
    expect(formatPointId({ id_num: '0', id_uuid: null })).toBe(0);
    expect(formatPointId({ id_num: null, id_uuid: U.toUpperCase() })).toBe(U);
    expect(() => formatPointId({ id_num: null, id_uuid: null })).toThrow();
  });

  it('converts parsed ids', () => {
    expect(toWireId({ num: '7' })).toBe(7);
    expect(toWireId({ uuid: U })).toBe(U);
    expect(pidOf({ num: '7' })).toBe('7');
    expect(pidOf({ uuid: U })).toBe(U);
    expect(idColumns({ num: '7' })).toEqual({ id_num: '7', id_uuid: null });
    expect(idColumns({ uuid: U })).toEqual({ id_num: null, id_uuid: U });
  });
});

describe('ordering in Postgres', () => {
  const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';
  const schema = `ids_test_${process.pid}_${Date.now()}`;
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const U1 = '00000000-0000-0000-0000-000000000001';
  const U2 = '7fffffff-0000-0000-0000-000000000000';
  const U3 = 'ffffffff-0000-0000-0000-000000000000';
  const ids: ParsedPointId[] = [
    { uuid: U3 },
    { num: '10' },
    { uuid: U1 },
    { num: '2' },
    { num: '18446744073709551615' },
    { uuid: U2 },
    { num: '0' },
  ];

  beforeAll(async () => {
    await sql.unsafe(`create schema ${schema}`);
    await sql.unsafe(`set search_path to ${schema}`);
    await sql.unsafe(`create table ${schema}.pts (
      id_num numeric(20,0), id_uuid uuid,
      pid text generated always as (coalesce(id_num::text, id_uuid::text)) stored primary key)`);
    for (const id of ids) {
      const c = idColumns(id);
      await sql`insert into ${sql(schema)}.pts (id_num, id_uuid) values (${c.id_num}, ${c.id_uuid})`;
    }
  });

  afterAll(async () => {
    await sql.unsafe(`drop schema if exists ${schema} cascade`);
    await sql.end();
  });

  const ordered = ['0', '2', '10', '18446744073709551615', U1, U2, U3];

  it('ID_ORDER puts numbers first (numerically) then UUIDs (byte-wise)', async () => {
    const rows = await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts order by ${idOrder(sql)}`;
    expect(rows.map((r) => r.pid)).toEqual(ordered);
    const rows2 = await sql.unsafe<{ pid: string }[]>(`select pid from ${schema}.pts order by ${ID_ORDER}`);
    expect(rows2.map((r) => r.pid)).toEqual(ordered);
  });

  it('pid matches pidOf and formatPointId round-trips', async () => {
    // id_num (numeric) comes back from postgres.js as a string; do not alias a ::text cast as
    // `id_num` in a query ordered by ID_ORDER (order by would then sort the text alias).
    const rows = await sql<{ pid: string; id_num: string | null; id_uuid: string | null }[]>`
      select pid, id_num, id_uuid from ${sql(schema)}.pts order by ${idOrder(sql)}`;
    expect(rows.map((r) => r.pid)).toEqual(ordered);
    for (const r of rows) {
      const parsed: ParsedPointId = r.id_num !== null ? { num: r.id_num } : { uuid: r.id_uuid! };
      expect(pidOf(parsed)).toBe(r.pid);
    }
    expect(formatPointId(rows[4]!)).toBe(U1);
    expect(formatPointId(rows[2]!)).toBe(10);
  });

  const after = async (id: number | string | ParsedPointId) =>
    (
      await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts where ${idAtOrAfter(sql, id)} order by ${idOrder(sql)}`
    ).map((r) => r.pid);

  it('idAtOrAfter is inclusive and follows ID_ORDER', async () => {
    expect(await after(0)).toEqual(ordered);
    expect(await after(2)).toEqual(ordered.slice(1));
    expect(await after(3)).toEqual(ordered.slice(2));
    expect(await after({ num: '18446744073709551615' })).toEqual(ordered.slice(3));
    expect(await after(U1)).toEqual([U1, U2, U3]);
    expect(await after(U2.replaceAll('-', ''))).toEqual([U2, U3]);
    expect(await after('80000000-0000-0000-0000-000000000000')).toEqual([U3]);
    expect(() => idAtOrAfter(sql, 'nope')).toThrow(QdrantError);
  });

  it('idIn matches mixed ids', async () => {
    const q = async (list: ParsedPointId[]) =>
      (await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts where ${idIn(sql, list)} order by ${idOrder(sql)}`).map(
        (r) => r.pid,
      );
    expect(await q([])).toEqual([]);
    expect(await q([{ num: '2' }, { num: '99' }])).toEqual(['2']);
    expect(await q([{ uuid: U2 }])).toEqual([U2]);
    expect(await q([{ num: '10' }, { uuid: U3 }, { uuid: U1 }])).toEqual(['10', U1, U3]);
  });

  it('idIn and idAtOrAfter are never NULL (safe under not) and accept a table alias', async () => {
    const notIn = (
      await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts t
        where not ${idIn(sql, [{ num: '2' }, { uuid: U2 }], 't')} order by ${idOrder(sql)}`
    ).map((r) => r.pid);
    expect(notIn).toEqual(['0', '10', '18446744073709551615', U1, U3]);
    const notInNums = (
      await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts t where not ${idIn(sql, [{ num: '2' }], 't')}`
    ).length;
    expect(notInNums).toBe(6);
    const notInUuids = (
      await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts t where not ${idIn(sql, [{ uuid: U1 }], 't')}`
    ).length;
    expect(notInUuids).toBe(6);
    const before = (
      await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts t where not ${idAtOrAfter(sql, U2, 't')} order by ${idOrder(sql)}`
    ).map((r) => r.pid);
    expect(before).toEqual(['0', '2', '10', '18446744073709551615', U1]);
    const beforeNum = (
      await sql<{ pid: string }[]>`select pid from ${sql(schema)}.pts t where not ${idAtOrAfter(sql, 10, 't')} order by ${idOrder(sql)}`
    ).map((r) => r.pid);
    expect(beforeNum).toEqual(['0', '2']);
  });
});
