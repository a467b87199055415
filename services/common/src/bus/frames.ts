import { STREAM_CHUNK_BYTES, type StreamFrameKind } from '@gatehouse/contracts';

/**
 * The wire form of a streamed reply: each bus message carries one or more frames and no NATS
 * headers. Frames written in the same turn of the event loop travel as one message (a
 * non-streamed answer's meta, body and end; the events of one upstream read), so the bus, the
 * server and the edge handle one message instead of several; a lone frame still leaves at once
 * (the batch is flushed in a microtask, never on a timer).
 *
 *   message = u8 version (1) · u32 seq (per message, from 0, so the reader sees a gap) · frame*
 *   frame   = u8 kind · u32 length · bytes
 *
 * An `error` frame's bytes are JSON `{ status, message, details }`. Error replies sent before any
 * frame (NATS services error headers) and the server's no-responders status keep their headers.
 */
export const FRAME_VERSION = 1;
const KINDS: readonly StreamFrameKind[] = ['meta', 'chunk', 'end', 'error'];
const KIND_CODE: Record<StreamFrameKind, number> = { meta: 0, chunk: 1, end: 2, error: 3 };

export interface RawFrame {
  kind: StreamFrameKind;
  data: Uint8Array;
}

/** Collects frames and publishes them as few messages as possible without delaying any. */
export class FrameBatcher {
  private frames: RawFrame[] = [];
  private bytes = 0;
  private seq = 0;
  private scheduled = false;
  /** Frames written so far (a stream that has written none may still answer with an error reply). */
  written = 0;

  constructor(private readonly publish: (data: Uint8Array) => void) {}

  add(kind: StreamFrameKind, data: Uint8Array): void {
    // Keep a message well under the server's max payload: a chunk is at most STREAM_CHUNK_BYTES.
    if (this.frames.length && this.bytes + data.byteLength > STREAM_CHUNK_BYTES) this.flush();
    this.frames.push({ kind, data });
    this.bytes += data.byteLength + 5;
    this.written++;
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  flush(): void {
    if (!this.frames.length) return;
    const out = Buffer.allocUnsafe(5 + this.bytes);
    out[0] = FRAME_VERSION;
    out.writeUInt32BE(this.seq++, 1);
    let off = 5;
    for (const f of this.frames) {
      out[off] = KIND_CODE[f.kind];
      out.writeUInt32BE(f.data.byteLength, off + 1);
      out.set(f.data, off + 5);
      off += 5 + f.data.byteLength;
    }
    this.frames = [];
    this.bytes = 0;
    this.publish(out);
  }
}

/** The message's sequence number and its frames (views into the message, not copies). */
export function decodeFrames(data: Uint8Array): { seq: number; frames: RawFrame[] } {
  if (data.byteLength < 5 || data[0] !== FRAME_VERSION) throw new Error('not a stream frame message');
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const seq = view.getUint32(1);
  const frames: RawFrame[] = [];
  let off = 5;
  while (off < data.byteLength) {
    if (off + 5 > data.byteLength) throw new Error('truncated stream frame');
    const kind = KINDS[data[off]!];
    const len = view.getUint32(off + 1);
    if (!kind || off + 5 + len > data.byteLength) throw new Error('malformed stream frame');
    frames.push({ kind, data: data.subarray(off + 5, off + 5 + len) });
    off += 5 + len;
  }
  return { seq, frames };
}
