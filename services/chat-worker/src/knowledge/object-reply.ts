import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { nuid } from 'nats';
import type { ChatOpReply } from '@gatehouse/contracts';
import type { Bus } from '@gatehouse/common';

/**
 * Bytes between the edge and the chat worker go through the bus's object store (`bus.claims()`,
 * swept by its TTL if a reader dies), streamed in both directions so neither side holds a file
 * whole: uploads come in as an object the edge wrote, downloads go out as an object the edge reads.
 */

/** The object the edge streamed an upload into (rejects when it is gone). */
export async function readObject(bus: Bus, name: string): Promise<Readable> {
  const store = await bus.claims();
  const obj = await store.get(name);
  if (!obj) throw new Error(`upload object ${name} is missing from the object store`);
  // A digest mismatch surfaces on obj.error; the stream itself then errors too.
  obj.error.catch(() => undefined);
  return Readable.fromWeb(obj.data as unknown as WebReadableStream<Uint8Array>);
}

export async function deleteObject(bus: Bus, name: string): Promise<void> {
  const store = await bus.claims();
  await store.delete(name).catch(() => undefined);
}

/**
 * Answer bytes: stream `data` into the object store and reply with `download` naming it (the edge
 * sends it with this content type and disposition, then deletes it). For any operation whose
 * catalog reply is `R.Bytes` — file content here, a knowledge base's zip export elsewhere.
 */
export async function replyWithBytes(bus: Bus, data: Readable, opts: { contentType: string; disposition?: string }): Promise<ChatOpReply & { body: null }> {
  const store = await bus.claims();
  const object = `download-${nuid.next()}`;
  const info = await store.put({ name: object }, paced(bus, data));
  return { body: null, download: { object, contentType: opts.contentType, size: info.size, ...(opts.disposition ? { disposition: opts.disposition } : {}) } };
}

/** Open WebUI's RFC 5987 filename: `attachment; filename*=UTF-8''<quote(name)>` (Python's quote keeps `/`, escapes `!'()*`). */
export function contentDisposition(kind: 'attachment' | 'inline', filename: string): string {
  const quoted = encodeURIComponent(filename)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replaceAll('%2F', '/');
  return `${kind}; filename*=UTF-8''${quoted}`;
}

/**
 * The object store's put publishes each chunk without waiting for the last one, so a fast source
 * would pile up in the connection's buffer: wait for the server to take what was sent every few MB.
 */
function paced(bus: Bus, data: Readable): ReadableStream<Uint8Array> {
  const it = data[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let sinceFlush = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await it.next();
      if (done) return controller.close();
      sinceFlush += value.length;
      if (sinceFlush >= 4 * 1024 * 1024) {
        sinceFlush = 0;
        await bus.nc.flush();
      }
      controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.length));
    },
    async cancel() {
      await it.return?.();
    },
  });
}
