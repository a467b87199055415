/**
 * Test helpers: a VectorStore on a schema of its own in the test database (dropped by `close`),
 * and Qdrant's `basic_collection_setup` (tests/openapi/helpers/collection_setup.py).
 */
import postgres from 'postgres';
import { migrateDatabase, PLATFORM_FOLDER } from '@gatehouse/common';
import { QdrantError } from './errors.ts';
import { VectorStore } from './vector-store.ts';
import { EXACT_JSON_TYPES } from './common.ts';
import { NO_DELAY } from './pg-socket.ts';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';

export type TestStore = { sql: postgres.Sql; schema: string; store: VectorStore; close: () => Promise<void> };

export async function openTestStore(label: string, opts: { snapshotDir?: string } = {}): Promise<TestStore> {
  const sql = postgres(TEST_DATABASE_URL, { onnotice: () => {}, max: 6, types: EXACT_JSON_TYPES, ...NO_DELAY });
  const schema = `vs_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  // The same runner as scripts/start and compose: the catalog comes from infra/migrations/vector.
  await migrateDatabase(sql, { folders: [PLATFORM_FOLDER, 'vector'], schemas: { vector: schema } });
  const store = new VectorStore(sql, { schema, ...opts });
  return {
    sql,
    schema,
    store,
    close: async () => {
      await sql`drop schema if exists ${sql(schema)} cascade`;
      await sql.end();
    },
  };
}

/** The 10 points of Qdrant's basic setup: 8 dense (Dot, 4-d) and 2 with only a sparse vector. */
export async function basicCollectionSetup(store: VectorStore, name: string): Promise<void> {
  await store.deleteCollection(name);
  await store.createCollection(name, {
    vectors: { size: 4, distance: 'Dot', on_disk: false },
    sparse_vectors: { 'sparse-text': {} },
    on_disk_payload: true,
    wal_config: { wal_capacity_mb: null },
  });
  await store.upsertPoints(
    name,
    {
      points: [
        { id: 1, vector: [0.05, 0.61, 0.76, 0.74], payload: { city: 'Berlin', price: 10.0 } },
        { id: 2, vector: [0.19, 0.81, 0.75, 0.11], payload: { city: ['Berlin', 'London'], price: 11.0 } },
        { id: 3, vector: [0.36, 0.55, 0.47, 0.94], payload: { city: ['Berlin', 'Moscow'], price: 9.5 } },
        { id: 4, vector: [0.18, 0.01, 0.85, 0.8], payload: { city: ['London', 'Moscow'], price: 9 } },
        { id: 5, vector: [0.24, 0.18, 0.22, 0.44], payload: { count: 0 } },
        { id: 6, vector: [0.35, 0.08, 0.11, 0.44] },
        { id: 7, vector: [0.25, 0.98, 0.14, 0.43], payload: { city: null, price: null } },
        { id: 8, vector: [0.79, 0.53, 0.72, 0.15], payload: { city: [], price: [] } },
        { id: 9, vector: { 'sparse-text': { indices: [66, 12], values: [0.5, 0.5] } } },
        { id: 10, vector: { 'sparse-text': { indices: [1, 2, 3], values: [0.1, 0.2, 0.3] } }, payload: { city: [], price: [] } },
      ],
    },
    { wait: true },
  );
}

/** The QdrantError a promise rejects with (fails the test if it resolves or throws something else). */
export async function qdrantError(p: Promise<unknown>): Promise<QdrantError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof QdrantError) return err;
    throw err;
  }
  throw new Error('expected a QdrantError, but the call succeeded');
}

export const dot = (a: readonly number[], b: readonly number[]) => a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0);
