import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('alias');
  await basicCollectionSetup(t.store, 'a1');
  await basicCollectionSetup(t.store, 'a2');
});
afterAll(async () => {
  await t.close();
});

const create = (alias_name: string, collection_name: string) => ({ create_alias: { alias_name, collection_name } });

describe('aliases (test_alias.py)', () => {
  it('an alias answers reads and writes like its collection, and is listed', async () => {
    const { store } = t;
    expect(await store.updateAliases({ actions: [create('prod', 'a1')] })).toBe(true);
    expect(await store.listAliases()).toEqual({ aliases: [{ alias_name: 'prod', collection_name: 'a1' }] });
    expect(await store.listAliases('a1')).toEqual({ aliases: [{ alias_name: 'prod', collection_name: 'a1' }] });
    expect(await store.listAliases('a2')).toEqual({ aliases: [] });
    expect((await store.countPoints('prod', {})).count).toBe(10);
    await store.upsertPoints('prod', { points: [{ id: 11, vector: [1, 0, 0, 0] }] }, { wait: true });
    expect((await store.countPoints('a1', {})).count).toBe(11);
    expect((await store.getCollection('prod')).points_count).toBe(11);
    expect(await store.collectionExists('prod')).toEqual({ exists: true });
    const q = await store.queryPoints('prod', { query: [0.2, 0.1, 0.9, 0.7], limit: 3 });
    expect(q.points).toHaveLength(3);
  });

  it('refuses an alias named like a collection (409) and a collection named like an alias (400)', async () => {
    const { store } = t;
    let err = await qdrantError(store.updateAliases({ actions: [create('a2', 'a1')] }));
    expect([err.status, err.message]).toEqual([409, 'Wrong input: Collection `a2` already exists!']);
    err = await qdrantError(store.createCollection('prod', { vectors: { size: 4, distance: 'Dot' } }));
    expect([err.status, err.message]).toEqual([400, "Wrong input: Can't create collection with name prod. Alias with the same name already exists"]);
    err = await qdrantError(store.updateAliases({ actions: [create('x', 'missing')] }));
    expect([err.status, err.message]).toEqual([404, 'Not found: Collection `missing` doesn\'t exist!']);
    err = await qdrantError(store.listAliases('missing'));
    expect(err.status).toBe(404);
  });

  it('applies all actions or none: a failing action undoes the ones before it', async () => {
    const { store } = t;
    const err = await qdrantError(
      store.updateAliases({ actions: [create('staging', 'a2'), { rename_alias: { old_alias_name: 'nope', new_alias_name: 'y' } }] }),
    );
    expect([err.status, err.message]).toEqual([404, 'Not found: Alias nope does not exists!']);
    expect((await store.listAliases()).aliases.map((a) => a.alias_name)).toEqual(['prod']);
  });

  it('switches an alias between collections atomically, renames and deletes', async () => {
    const { store } = t;
    await store.updateAliases({ actions: [{ delete_alias: { alias_name: 'prod' } }, create('prod', 'a2')] });
    expect(await store.listAliases()).toEqual({ aliases: [{ alias_name: 'prod', collection_name: 'a2' }] });
    await store.updateAliases({ actions: [{ rename_alias: { old_alias_name: 'prod', new_alias_name: 'live' } }] });
    expect(await store.listAliases()).toEqual({ aliases: [{ alias_name: 'live', collection_name: 'a2' }] });
    // Deleting an alias that does not exist is not an error (Qdrant).
    expect(await store.updateAliases({ actions: [{ delete_alias: { alias_name: 'never' } }] })).toBe(true);
    await store.updateAliases({ actions: [{ delete_alias: { alias_name: 'live' } }] });
    expect(await store.listAliases()).toEqual({ aliases: [] });
    const err = await qdrantError(store.countPoints('live', {}));
    expect([err.status, err.message]).toEqual([404, 'Not found: Collection `live` doesn\'t exist!']);
  });

  it('deleting a collection drops its aliases; deleting by alias name deletes nothing', async () => {
    const { store } = t;
    await basicCollectionSetup(store, 'a3');
    await store.updateAliases({ actions: [create('tmp', 'a3')] });
    expect(await store.deleteCollection('tmp')).toBe(false);
    expect(await store.deleteCollection('a3')).toBe(true);
    expect(await store.listAliases()).toEqual({ aliases: [] });
  });

  it('rejects a malformed body with Qdrant\'s format error', async () => {
    const err = await qdrantError(t.store.updateAliases({ actions: [{ create_alias: { alias_name: 'x' } }] }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^Format error in JSON body: /);
  });
});
