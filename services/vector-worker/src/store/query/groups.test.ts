/**
 * Groups: a port of Qdrant's test_group.py (which the conformance runner skips, its imports are
 * not installable here) — search, recommend and query groups over chunked documents, array and
 * heterogeneous group keys, a key most points share, `with_lookup` in its three forms.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
const C = 'groups';
const LOOKUP = 'groups_lookup';

beforeAll(async () => {
  t = await openTestStore('groups');
  await basicCollectionSetup(t.store, C);
  const points: { id: number; vector: number[]; payload: Record<string, unknown> }[] = [];
  // 50 documents of 5 chunks each, all at the same vector.
  for (let doc = 0; doc < 50; doc++) for (let chunk = 0; chunk < 5; chunk++) points.push({ id: doc * 5 + chunk, vector: [1, 0, 0, 0], payload: { docId: doc } });
  // Array keys: each point belongs to two groups.
  for (let doc = 0; doc < 3; doc++) {
    for (let chunk = 0; chunk < 5; chunk++) points.push({ id: 5000 + doc * 5 + chunk, vector: [0, 1, 0, 0], payload: { multiId: [`valid_${doc}`, `valid_too_${doc}`] } });
  }
  const hetero: unknown[] = ['string', 123, [1, 2, 3], ['a', 'b', 'c'], 2.42, [['a', 'b', 'c']], { object: 'string' }, [], null];
  hetero.forEach((v, i) => points.push({ id: 6000 + i, vector: [0, 0, 1, 0], payload: { heterogenousId: v } }));
  // 100 points of group "a" nearer the query than 10 points of groups "a" and "b".
  for (let i = 0; i < 100; i++) points.push({ id: 9000 + i, vector: [0, 0, 1, 1], payload: { mkey: ['a'] } });
  for (let i = 0; i < 10; i++) points.push({ id: 9100 + i, vector: [0, 0, 1, 0], payload: { mkey: ['a', 'b'] } });
  await t.store.upsertPoints(C, { points }, { wait: true });
  await basicCollectionSetup(t.store, LOOKUP);
  await t.store.upsertPoints(LOOKUP, { points: Array.from({ length: 100 }, (_, i) => ({ id: i, vector: [1, 0, 0, 0], payload: { body: `doc body ${i}` } })) });
});
afterAll(async () => {
  await t.close();
});

describe('groups (test_group.py)', () => {
  it('a key most of the nearest points share still yields the rarer group', async () => {
    const res = await t.store.searchGroups(C, { vector: [0, 0, 1, 1], limit: 2, group_by: 'mkey', group_size: 2 });
    expect(res.groups.map((g) => g.id)).toEqual(['a', 'b']);
  });

  it('search and recommend groups: 10 documents of 3 chunks, hits carry their group key', async () => {
    const search = await t.store.searchGroups(C, { vector: [1, 0, 0, 0], limit: 10, group_by: 'docId', group_size: 3, with_payload: true });
    const reco = await t.store.recommendGroups(C, { positive: [5, 10, 15], negative: [6, 11, 16], limit: 10, group_by: 'docId', group_size: 3, with_payload: true });
    for (const res of [search, reco]) {
      expect(res.groups).toHaveLength(10);
      for (const g of res.groups) {
        expect(g.hits).toHaveLength(3);
        for (const h of g.hits) expect(h.payload?.docId).toBe(g.id);
      }
    }
  });

  it('with_vectors, an unknown key (no groups), array keys with and without []', async () => {
    const withVec = await t.store.searchGroups(C, { vector: [1, 0, 0, 0], limit: 5, group_by: 'docId', group_size: 3, with_vector: true });
    expect(withVec.groups).toHaveLength(5);
    for (const g of withVec.groups) for (const h of g.hits) expect(h.vector).toEqual([1, 0, 0, 0]);
    expect((await t.store.searchGroups(C, { vector: [1, 0, 0, 0], limit: 5, group_by: 'inexistentDocId', group_size: 3 })).groups).toEqual([]);
    for (const key of ['multiId', 'multiId[]']) {
      const res = await t.store.searchGroups(C, { vector: [0, 1, 0, 0], limit: 6, group_by: key, group_size: 3 });
      expect(new Set(res.groups.map((g) => g.id))).toEqual(new Set([0, 1, 2].flatMap((i) => [`valid_${i}`, `valid_too_${i}`])));
    }
  });

  it('heterogeneous values: strings and integers (array elements each) make groups, the rest does not', async () => {
    const res = await t.store.queryGroups(C, { query: [0, 0, 1, 0], limit: 10, group_by: 'heterogenousId', group_size: 3 });
    expect(new Set(res.groups.map((g) => g.id))).toEqual(new Set(['c', 3, 1, 123, 2, 'string', 'b', 'a']));
  });

  it('with_lookup: a name, {collection}, explicit selectors, none of payload and vectors, everything', async () => {
    const forms: unknown[] = [LOOKUP, { collection: LOOKUP }, { collection: LOOKUP, with_payload: true, with_vectors: false }];
    for (const with_lookup of forms) {
      const res = await t.store.searchGroups(C, { vector: [1, 0, 0, 0], limit: 10, group_by: 'docId', group_size: 3, with_lookup });
      expect(res.groups).toHaveLength(10);
      for (const g of res.groups) {
        expect(g.hits).toHaveLength(3);
        expect(g.lookup).toEqual({ id: g.id, payload: { body: `doc body ${g.id}` } });
      }
    }
    const bare = await t.store.queryGroups(C, {
      query: [1, 0, 0, 0],
      group_by: 'docId',
      with_lookup: { collection: LOOKUP, with_payload: false, with_vectors: false },
    });
    for (const g of bare.groups) expect(g.lookup).toEqual({ id: g.id });
    const full = await t.store.queryGroups(C, { query: [1, 0, 0, 0], group_by: 'docId', with_lookup: { collection: LOOKUP, with_payload: true, with_vectors: true } });
    for (const g of full.groups) expect(g.lookup?.vector).toEqual([1, 0, 0, 0]);
  });

  it('a missing lookup collection (with_lookup or lookup_from) is 404 naming it', async () => {
    let err = await qdrantError(t.store.queryGroups(C, { query: [1, 0, 0, 0], group_by: 'docId', with_lookup: { collection: 'nope' } }));
    expect([err.status, err.message]).toEqual([404, 'Not found: Collection nope not found']);
    err = await qdrantError(t.store.queryGroups(C, { query: [1, 0, 0, 0], group_by: 'docId', lookup_from: { collection: 'nope2', vector: 'default' } }));
    expect([err.status, err.message]).toEqual([404, 'Not found: Collection nope2 not found']);
  });

  it('group_size and limit are validated', async () => {
    const err = await qdrantError(t.store.queryGroups(C, { query: [1, 0, 0, 0], group_by: 'docId', group_size: 0 }));
    expect(err.status).toBe(422);
  });
});
