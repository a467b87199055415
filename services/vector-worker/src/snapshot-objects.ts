import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { nuid } from 'nats';
import { VectorSnapshotObject, type VectorSnapshotObject as SnapshotObject } from '@gatehouse/contracts';
import type { Bus } from '@gatehouse/common';
import { QdrantError } from './store/errors.ts';
import type { SnapshotStore } from './store/snapshots/snapshots.ts';

/**
 * Snapshot bytes between the worker and the edge go through the bus's object store, as the chat
 * face's files do (services/edge/src/faces/chat/files-routes.ts): the reader deletes the object,
 * the bucket's TTL sweeps what a dead reader left.
 */

/** `GET …/snapshots/{name}`: copy the file into the object store and name it to the edge. */
export async function putSnapshot(bus: Bus, path: string): Promise<SnapshotObject> {
  const store = await bus.claims();
  const object = `vector-snapshot-${nuid.next()}`;
  const { size } = await stat(path);
  await store.put({ name: object }, Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>);
  return { object, size, name: basename(path) };
}

/** `POST …/snapshots/upload`: take the uploaded object into a temporary file, recover from it, delete both. */
export async function recoverUploaded(bus: Bus, snapshots: SnapshotStore, collection: string, body: unknown, checksum?: string): Promise<true> {
  const parsed = VectorSnapshotObject.safeParse(body);
  if (!parsed.success) throw new QdrantError(400, 'Bad request: the upload carries no snapshot file');
  const store = await bus.claims();
  const tmp = await snapshots.tempFile();
  try {
    const obj = await store.get(parsed.data.object);
    if (!obj) throw new QdrantError(400, 'Bad request: the uploaded snapshot is no longer available; upload it again');
    await pipeline(Readable.fromWeb(obj.data as never), createWriteStream(tmp));
    await obj.error;
    return await snapshots.recoverFile(collection, tmp, checksum);
  } finally {
    await rm(tmp, { force: true });
    await store.delete(parsed.data.object).catch(() => undefined);
  }
}
