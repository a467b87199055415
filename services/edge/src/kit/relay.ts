import { Readable } from 'node:stream';
import { BusError, type Bus, type StreamFrame } from '@gatehouse/common';

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

/**
 * The rest of a stream as a response body: Fastify sends it with backpressure. `trailer`: what to
 * send instead of cutting the connection when the stream fails after its status went out (a
 * worker killed mid-stream), for protocols that have an in-band error (Anthropic's `error` event).
 */
export function relayChunks<M, E>(frames: AsyncIterable<StreamFrame<M, E>>, trailer?: (err: unknown) => Buffer): Readable {
  return Readable.from(trailer ? withTrailer(chunkBytes(frames), trailer) : chunkBytes(frames));
}

async function* withTrailer(chunks: AsyncGenerator<Buffer>, trailer: (err: unknown) => Buffer): AsyncGenerator<Buffer> {
  try {
    yield* chunks;
  } catch (err) {
    yield trailer(err);
  }
}
