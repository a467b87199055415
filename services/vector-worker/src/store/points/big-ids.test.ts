/**
 * u64 point ids beyond 2^53 (what the exact JSON parser hands the store as BigInts): stored,
 * matched and returned exactly, ordered numerically (port of test_optional_vectors.py's
 * test_update_vectors_unknown_point id too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('bigids');
});
afterAll(async () => {
  await t.close();
});

const A = 2n ** 53n + 1n; // the first integer a double cannot hold
const B = 424242424242424242n;
const MAX = 18446744073709551615n;

describe('point ids beyond 2^53', () => {
  const C = 'big';
  beforeAll(async () => {
    await t.store.createCollection(C, { vectors: { size: 2, distance: 'Dot' } });
    await t.store.upsertPoints(C, { points: [
      { id: MAX, vector: [3, 0], payload: { k: 'max' } },
      { id: B, vector: [2, 0], payload: { k: 'b', n: B } },
      { id: A, vector: [1, 0], payload: { k: 'a' } },
      { id: 7, vector: [0, 1] },
    ] }, { wait: true });
  });

  it('retrieves by body id and by path id, exactly', async () => {
    const recs = await t.store.retrievePoints(C, { ids: [B, A, MAX], with_payload: true });
    expect(recs.map((r) => r.id)).toEqual([B, A, MAX]);
    // Payload integers beyond 2^53 round-trip too (jsonb keeps the numeric; the store reads it exactly).
    expect(recs.map((r) => r.payload)).toEqual([{ k: 'b', n: B }, { k: 'a' }, { k: 'max' }]);
    expect((await t.store.getPoint(C, '424242424242424242')).id).toBe(B);
    expect(await t.store.retrievePoints(C, { ids: [B + 1n, A - 1n] })).toEqual([]);
  });

  it('search results, scroll order and next_page_offset carry the exact ids', async () => {
    const hits = await t.store.searchPoints(C, { vector: [1, 0], limit: 3 });
    expect(hits.map((h) => h.id)).toEqual([MAX, B, A]);
    const all = await t.store.scrollPoints(C, { limit: 10 });
    expect(all.points.map((p) => p.id)).toEqual([7, A, B, MAX]);
    const page = await t.store.scrollPoints(C, { limit: 1, offset: A });
    expect(page.points.map((p) => p.id)).toEqual([A]);
    expect(page.next_page_offset).toBe(B);
  });

  it('has_id matches only the exact id', async () => {
    const r = await t.store.scrollPoints(C, { filter: { must: [{ has_id: [B] }] } });
    expect(r.points.map((p) => p.id)).toEqual([B]);
    const none = await t.store.scrollPoints(C, { filter: { must: [{ has_id: [B - 2n] }] } });
    expect(none.points).toEqual([]);
  });

  it('match value / any / except on a payload integer beyond 2^53 compare it exactly', async () => {
    const ids = async (match: unknown) => (await t.store.scrollPoints(C, { filter: { must: [{ key: 'n', match }] } })).points.map((p) => p.id);
    expect(await ids({ value: B })).toEqual([B]);
    expect(await ids({ value: B + 1n })).toEqual([]);
    expect(await ids({ any: [B, 3] })).toEqual([B]);
    expect(await ids({ except: [B + 1n] })).toEqual([B]);
    const range = async (r: unknown) => (await t.store.scrollPoints(C, { filter: { must: [{ key: 'n', range: r }] } })).points.map((p) => p.id);
    expect(await range({ gte: B })).toEqual([B]);
    expect(await range({ gt: B })).toEqual([]);
  });

  it('groups by a payload integer beyond 2^53, and looks the group id up as a point id', async () => {
    const res = await t.store.searchGroups(C, { vector: [1, 0], limit: 5, group_by: 'n', group_size: 1, with_lookup: C });
    expect(res.groups.map((g) => [g.id, g.hits.map((h) => h.id), g.lookup?.id])).toEqual([[B, [B], B]]);
  });

  it('update vectors of an unknown point names its exact id; above u64::MAX is refused', async () => {
    const e = await qdrantError(t.store.updateVectors(C, { points: [{ id: 424242424242424243n, vector: [1, 1] }] }));
    expect(e.message).toBe('Not found: No point with id 424242424242424243 found');
    const over = await qdrantError(t.store.retrievePoints(C, { ids: [MAX + 1n] }));
    expect(over.message).toContain('value 18446744073709551616 is not a valid point ID');
  });

  it('deletes by exact id', async () => {
    await t.store.deletePoints(C, { points: [B] }, { wait: true });
    expect((await t.store.scrollPoints(C, { limit: 10 })).points.map((p) => p.id)).toEqual([7, A, MAX]);
  });
});
