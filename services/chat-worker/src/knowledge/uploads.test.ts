import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { blobPath, localUploadStore } from './uploads.ts';

const root = mkdtempSync(join(tmpdir(), 'upload-store-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const store = localUploadStore(root);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const read = async (r: Readable) => Buffer.concat(await r.toArray());
/** Several chunks, as a network stream delivers them. */
const chunked = (b: Buffer) => Readable.from([b.subarray(0, 3), b.subarray(3, 1000), b.subarray(1000)]);

describe('localUploadStore', () => {
  it('stores a stream under its SHA-256, reads the same bytes back, and deletes them', async () => {
    const bytes = Buffer.from('x'.repeat(5000) + 'end');
    const put = await store.put(chunked(bytes));
    expect(put).toEqual({ hash: sha(bytes), size: bytes.length, path: blobPath(sha(bytes)) });
    expect(put.path).toBe(`${put.hash.slice(0, 2)}/${put.hash.slice(2, 4)}/${put.hash}`);
    expect((await read(await store.get(put.path))).equals(bytes)).toBe(true);
    expect(await store.exists(put.path)).toBe(true);
    await store.delete(put.path);
    expect(await store.exists(put.path)).toBe(false);
    await expect(store.get(put.path)).rejects.toMatchObject({ code: 'ENOENT' });
    // Deleting what is not there is not an error.
    await store.delete(put.path);
  });

  it('keeps one copy of the same bytes, and leaves nothing in staging', async () => {
    const bytes = Buffer.from('same bytes twice');
    const a = await store.put(Readable.from([bytes]));
    const b = await store.put(chunked(Buffer.concat([bytes])));
    expect(b).toEqual(a);
    const dir = join(root, a.path.split('/')[0]!, a.path.split('/')[1]!);
    expect(readdirSync(dir)).toEqual([a.hash]);
    expect(readdirSync(join(root, '.tmp'))).toEqual([]);
  });

  it('publishes staged bytes only on commit, and discards them on request', async () => {
    const staged = await store.stage(Readable.from([Buffer.from('staged')]));
    expect(await store.exists(staged.path)).toBe(false);
    await staged.commit();
    expect((await read(await store.get(staged.path))).toString()).toBe('staged');
    const dropped = await store.stage(Readable.from([Buffer.from('dropped')]));
    await dropped.discard();
    expect(await store.exists(dropped.path)).toBe(false);
    expect(readdirSync(join(root, '.tmp'))).toEqual([]);
  });

  it('cleans up after a stream that fails midway, and never reads outside its root', async () => {
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('client went away'));
      },
    });
    await expect(store.put(failing)).rejects.toThrow('client went away');
    expect(readdirSync(join(root, '.tmp'))).toEqual([]);
    await expect(store.get('../../etc/passwd')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
