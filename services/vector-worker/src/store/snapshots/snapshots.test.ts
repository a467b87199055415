import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vector-snapshots-'));
  t = await openTestStore('snap', { snapshotDir: dir });
  await basicCollectionSetup(t.store, 's');
  await t.store.createFieldIndex('s', { field_name: 'city', field_schema: 'keyword' }, { wait: true });
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

const all = (name: string) => t.store.scrollPoints(name, { limit: 100, with_payload: true, with_vector: true });

describe('snapshots (test_snapshot.py, in this store\'s own format)', () => {
  it('create, list, recover into a new collection: same config, indexes and points', async () => {
    const { store } = t;
    const before = await all('s');
    const snap = await store.snapshots.create('s');
    expect(snap.name).toMatch(/^s-1-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.snapshot$/);
    const path = await store.snapshots.pathOf('s', snap.name);
    const bytes = await readFile(path);
    expect(snap.size).toBe(bytes.length);
    expect(snap.checksum).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(await store.snapshots.list('s')).toEqual([snap]);

    // The file: header, one point per line, end record.
    const lines = gunzipSync(bytes).toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ format: 'gatehouse.vector.snapshot', version: 1, collection: 's', payload_indexes: [{ field_name: 'city', field_schema: 'keyword' }] });
    expect(lines.at(-1)).toEqual({ end: true, points: 10 });
    expect(lines).toHaveLength(12);

    expect(await store.snapshots.recoverFromLocation('copy', { location: `file://${path}`, checksum: snap.checksum })).toBe(true);
    expect(await all('copy')).toEqual(before);
    const [a, b] = [await store.getCollection('s'), await store.getCollection('copy')];
    expect(b.config).toEqual(a.config);
    expect(b.payload_schema).toEqual(a.payload_schema);
  });

  it('recovering over an existing collection replaces its points and keeps its aliases', async () => {
    const { store } = t;
    const snap = (await store.snapshots.list('s'))[0]!;
    await store.updateAliases({ actions: [{ create_alias: { alias_name: 'copy-alias', collection_name: 'copy' } }] });
    await store.upsertPoints('copy', { points: [{ id: 99, vector: [1, 1, 1, 1] }] }, { wait: true });
    await store.deletePoints('copy', { points: [1, 2] }, { wait: true });
    await store.snapshots.recoverFromLocation('copy', { location: `file://${await store.snapshots.pathOf('s', snap.name)}` });
    expect(await all('copy-alias')).toEqual(await all('s'));
    // Through the alias: the collection's snapshots, and a recovery into the collection it names.
    const viaAlias = await store.snapshots.create('copy-alias');
    expect(viaAlias.name).toMatch(/^copy-1-/);
    expect((await store.snapshots.list('copy-alias')).map((d) => d.name)).toEqual((await store.snapshots.list('copy')).map((d) => d.name));
    await store.snapshots.recoverFromLocation('copy-alias', { location: `file://${await store.snapshots.pathOf('copy-alias', viaAlias.name)}` });
    expect(await store.listAliases('copy')).toEqual({ aliases: [{ alias_name: 'copy-alias', collection_name: 'copy' }] });
  });

  it('a snapshot is one moment: writes after it are not in it', async () => {
    const { store } = t;
    const snap = await store.snapshots.create('s');
    await store.upsertPoints('s', { points: [{ id: 500, vector: [0, 0, 0, 1] }] }, { wait: true });
    await store.snapshots.recoverFromLocation('moment', { location: `file://${await store.snapshots.pathOf('s', snap.name)}` });
    expect((await store.countPoints('moment', {})).count).toBe(10);
    expect((await store.countPoints('s', {})).count).toBe(11);
  });

  it('refuses a wrong checksum, a truncated file, a foreign file and a path outside the directory, leaving the collection as it was', async () => {
    const { store } = t;
    const snap = (await store.snapshots.list('s'))[0]!;
    const path = await store.snapshots.pathOf('s', snap.name);
    let err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: `file://${path}`, checksum: 'ab'.repeat(32) }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^Checksum mismatch: expected abab.*, actual [0-9a-f]{64}$/);

    const lines = gunzipSync(await readFile(path)).toString().trim().split('\n');
    const truncated = join(dir, 'truncated.snapshot');
    await writeFile(truncated, gzipSync(lines.slice(0, -3).join('\n') + '\n'));
    const countBefore = (await store.countPoints('copy', {})).count;
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: `file://${truncated}` }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: the snapshot is truncated (no end record)']);
    expect((await store.countPoints('copy', {})).count).toBe(countBefore);

    const foreign = join(dir, 'foreign.snapshot');
    await writeFile(foreign, 'not a snapshot');
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: `file://${foreign}` }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: the file is not a snapshot of this store (not gzip-compressed NDJSON)']);

    // A line too long to hold is refused while reading, before it is buffered whole.
    const huge = join(dir, 'huge.snapshot');
    await writeFile(huge, gzipSync(`${lines[0]}\n{"id":1,"payload":{"x":"${'x'.repeat(65 * 1024 * 1024)}"}}\n`));
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: `file://${huge}` }));
    expect([err.status, err.message]).toEqual([400, `Bad request: a snapshot line is longer than ${64 * 1024 * 1024} bytes`]);
    expect((await store.countPoints('copy', {})).count).toBe(countBefore);

    // Outside the snapshot directory a file reads as absent, whether or not it exists (no oracle
    // for the host's files); the wording is Qdrant's for a missing file.
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: 'file:///etc/passwd' }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: Snapshot file "/etc/passwd" does not exist']);
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: 'file:///whatever.snapshot' }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: Snapshot file "/whatever.snapshot" does not exist']);
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: `file://${join(dir, 'missing.snapshot')}` }));
    expect([err.status, err.message]).toEqual([400, `Bad request: Snapshot file "${join(dir, 'missing.snapshot')}" does not exist`]);
    // A host in a file URL is Qdrant's 400, not a 500.
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: 'file://whatever.snapshot' }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: Invalid snapshot URI, file path must be absolute or on localhost']);
    err = await qdrantError(store.snapshots.recoverFromLocation('copy', { location: 'ftp://example.com/x.snapshot' }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: Unsupported snapshot location scheme: ftp']);
  });

  it('delete, and 404s for unknown snapshots and collections', async () => {
    const { store } = t;
    const snaps = await store.snapshots.list('s');
    expect(await store.snapshots.delete('s', snaps[0]!.name)).toBe(true);
    expect(await store.snapshots.list('s')).toHaveLength(snaps.length - 1);
    let err = await qdrantError(store.snapshots.delete('s', snaps[0]!.name));
    expect([err.status, err.message]).toEqual([404, `Not found: Snapshot ${snaps[0]!.name} not found`]);
    err = await qdrantError(store.snapshots.pathOf('s', '../../etc/passwd'));
    expect(err.status).toBe(404);
    err = await qdrantError(store.snapshots.create('missing'));
    expect([err.status, err.message]).toEqual([404, 'Not found: Collection `missing` doesn\'t exist!']);
    err = await qdrantError(store.snapshots.list('missing'));
    expect(err.status).toBe(404);
  });
});
