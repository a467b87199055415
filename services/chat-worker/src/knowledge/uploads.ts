import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, normalize, sep } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Where an upload's bytes went: SHA-256 (hex), byte count, the store's path for them. */
export interface StoredBlob {
  hash: string;
  size: number;
  /** Content-addressed (`ab/cd/<sha256>`): the same bytes always land on the same path. */
  path: string;
}

/** Bytes written and hashed but not yet visible under their path (see `stage`). */
export interface StagedBlob extends StoredBlob {
  /** Make the bytes visible at `path` (a no-op when the same bytes are already there). */
  commit(): Promise<void>;
  /** Throw the staged bytes away. */
  discard(): Promise<void>;
}

/**
 * Uploaded files' bytes, content-addressed by SHA-256 so that the same bytes are stored once
 * however often they are uploaded. A small interface so that another backend (S3…) can replace
 * the local directory without touching the operations.
 */
export interface UploadStore {
  /** Store a stream: hashed on the way, visible under its path when this resolves. */
  put(data: Readable): Promise<StoredBlob>;
  /**
   * Write and hash without publishing, so the caller can publish inside its own critical section
   * (the files operations publish under the hash's advisory lock, so a concurrent delete of the
   * last row using the same bytes cannot remove them in between).
   */
  stage(data: Readable): Promise<StagedBlob>;
  /** The bytes at `path` (rejects with code ENOENT when they are not there). */
  get(path: string): Promise<Readable>;
  exists(path: string): Promise<boolean>;
  delete(path: string): Promise<void>;
}

/** The path of a hash: two levels of fan-out keep directories small. */
export const blobPath = (hash: string): string => `${hash.slice(0, 2)}/${hash.slice(2, 4)}/${hash}`;

/** The local-directory store (UPLOAD_DIR): blobs under `<root>/ab/cd/<sha256>`, staging in `<root>/.tmp`. */
export function localUploadStore(root: string): UploadStore {
  const tmpDir = join(root, '.tmp');
  // A stored path is ours only: never let a row's path climb out of the root.
  const resolve = (path: string): string => {
    const full = normalize(join(root, path));
    if (!full.startsWith(normalize(root) + sep)) throw Object.assign(new Error(`upload path outside the store: ${path}`), { code: 'ENOENT' });
    return full;
  };

  async function stage(data: Readable): Promise<StagedBlob> {
    await mkdir(tmpDir, { recursive: true });
    const tmp = join(tmpDir, `${Date.now()}-${randomBytes(6).toString('hex')}`);
    const sha = createHash('sha256');
    let size = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        sha.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(data, tap, createWriteStream(tmp, { flags: 'wx' }));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    const hash = sha.digest('hex');
    const path = blobPath(hash);
    return {
      hash,
      size,
      path,
      async commit() {
        const target = resolve(path);
        if (await exists(target)) return void (await rm(tmp, { force: true }));
        await mkdir(dirname(target), { recursive: true });
        // rename is atomic: a reader sees all of the bytes or none.
        await rename(tmp, target);
      },
      discard: () => rm(tmp, { force: true }),
    };
  }

  async function exists(full: string): Promise<boolean> {
    return stat(full).then(
      (s) => s.isFile(),
      () => false,
    );
  }

  return {
    stage,
    async put(data) {
      const s = await stage(data);
      await s.commit();
      return { hash: s.hash, size: s.size, path: s.path };
    },
    async get(path) {
      const full = resolve(path);
      // Open first so a missing blob rejects here, not as a stream error later.
      await stat(full);
      return createReadStream(full);
    },
    exists: async (path) => exists(resolve(path)),
    async delete(path) {
      await unlink(resolve(path)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    },
  };
}
