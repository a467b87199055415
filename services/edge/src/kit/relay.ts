import { Readable } from 'node:stream';
import { BusError, type Bus, type BusStreamReader, type StreamFrame } from '@gatehouse/common';

/**
 * A getter for the bus that throws the face's 503 while NATS is not attached, so every route
 * answers "try again shortly" fast instead of hanging. The face's error handler puts the message
 * in its own envelope.
 */
export function requireBus(bus: () => Bus | undefined, unavailable: string): () => Bus {
  return () => {
    const b = bus();
    if (!b) throw new BusError(503, unavailable);
    return b;
  };
}

/**
 * Wait for a stream's first frame, which must be the meta frame (status, content type…): until it
 * arrives nothing has been sent, so a refusal from the worker still becomes a proper error in the
 * face's envelope instead of a broken body.
 */
export async function firstMeta<M, E>(frames: AsyncGenerator<StreamFrame<M, E>>, worker: string): Promise<M> {
  const first = await frames.next();
  if (first.done || first.value.kind !== 'meta') {
    await frames.return(undefined);
    throw new BusError(502, `the ${worker} answered without its first (meta) frame`);
  }
  return first.value.meta;
}

/** The chunk frames' bytes as they arrive, without copying (end and meta frames carry no body). */
export async function* chunkBytes<M, E>(frames: AsyncIterable<StreamFrame<M, E>>): AsyncGenerator<Buffer> {
  for await (const f of frames) if (f.kind === 'chunk') yield Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
}

/** The rest of a stream as a response body: Fastify sends it with backpressure. */
export function relayChunks<M, E>(frames: AsyncIterable<StreamFrame<M, E>>): Readable {
  return Readable.from(chunkBytes(frames));
}

/** `firstMeta` for a stream reader (openBusStream): the meta frame, or the stream is closed and a 502 thrown. */
export async function readMeta<M, E>(stream: BusStreamReader<M, E>, worker: string): Promise<M> {
  let first;
  try {
    first = await stream.next();
  } catch (err) {
    stream.close();
    throw err;
  }
  if (first?.kind !== 'meta') {
    stream.close();
    throw new BusError(502, `the ${worker} answered without its first (meta) frame`);
  }
  return first.meta;
}

const asBuffer = (d: Uint8Array) => Buffer.from(d.buffer, d.byteOffset, d.byteLength);

/** The chunks that have already arrived, as one buffer (undefined if none). Throws the stream's error. */
function takeArrived<M, E>(stream: BusStreamReader<M, E>, first?: Uint8Array): Buffer | undefined {
  const parts: Buffer[] = first ? [asBuffer(first)] : [];
  for (let f = stream.buffered(); f; f = stream.buffered()) if (f.kind === 'chunk') parts.push(asBuffer(f.data));
  return parts.length <= 1 ? parts[0] : Buffer.concat(parts);
}

/**
 * The rest of a stream as a response body. When it has all arrived already (a non-streamed
 * answer: meta, body and end come in one bus message) it is one buffer, sent with its length in
 * one write; otherwise a stream whose every write carries all the chunks that arrived together,
 * without waiting for more. Closing the response closes the bus stream (and cancels the work).
 */
export function responseBody<M, E>(stream: BusStreamReader<M, E>, trailer?: (err: unknown) => Buffer): Buffer | Readable {
  let arrived: Buffer | undefined;
  try {
    arrived = takeArrived(stream);
  } catch (err) {
    stream.close();
    throw err;
  }
  if (stream.ended) {
    stream.close();
    return arrived ?? Buffer.alloc(0);
  }
  let pending = arrived;
  return new Readable({
    read() {
      // A failure after the status went out (a worker killed mid-stream): the protocol's in-band
      // error if it has one (`trailer`: Anthropic's `error` event), else a cut connection.
      const fail = (err: unknown): void => {
        if (!trailer) return void this.destroy(err as Error);
        this.push(trailer(err));
        this.push(null);
      };
      if (pending) {
        const p = pending;
        pending = undefined;
        this.push(p);
        return;
      }
      const pull = (): void => {
        stream.next().then(
          (f) => {
            if (!f) return void this.push(null);
            let bytes;
            try {
              bytes = takeArrived(stream, f.kind === 'chunk' ? f.data : undefined);
            } catch (err) {
              return void fail(err);
            }
            if (bytes) this.push(bytes);
            if (stream.ended) this.push(null);
            else if (!bytes) pull(); // a frame without bytes (none is sent today): keep reading
          },
          (err: unknown) => fail(err),
        );
      };
      pull();
    },
    destroy(err, cb) {
      stream.close();
      cb(err);
    },
  });
}
