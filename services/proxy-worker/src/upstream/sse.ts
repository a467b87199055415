/**
 * A streaming Server-Sent Events parser following the WHATWG event-stream rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
 * - bytes are decoded as UTF-8 in streaming mode, so a character split between chunks is reassembled;
 *   a leading BOM is dropped;
 * - lines end in `\r\n`, `\n` or `\r` (a `\r\n` split between chunks counts once);
 * - `data:` lines of one event are joined with `\n`; one space after the colon is removed;
 * - lines starting with `:` are comments; `retry:` and unknown fields are ignored;
 * - an event is dispatched at a blank line, only when it had data; `event` is omitted when not given;
 * - `id` is the last event id seen so far (it persists across events, per the spec), omitted until one is set;
 * - an event not terminated by a blank line when the stream ends is discarded (the spec's rule; a connection
 *   cut mid-event never yields half an event).
 */

export interface SSEEvent {
  event?: string;
  data: string;
  id?: string;
}

export class SSEParseError extends Error {
  override name = 'SSEParseError';
}

/** Longest line buffered while waiting for its end; beyond it the stream is not SSE worth reading. */
export const DEFAULT_MAX_LINE_CHARS = 16 * 1024 * 1024;

/**
 * The same parser, fed synchronously: `push` takes the bytes of one read and returns the events they
 * completed (all of them at once, so a caller can forward one read's events together); `end` takes
 * the end of the stream. After handling what `push` returned, call `check()`: it throws
 * SSEParseError when the line still waiting for its end is longer than `maxLineChars` (the events
 * before it are not lost).
 */
export class SSEDecoder {
  private readonly maxLine: number;
  private readonly decoder = new TextDecoder('utf-8');
  private buf = '';
  private skipLF = false; // the previous chunk ended in '\r': a '\n' opening the next one belongs to it
  private data = '';
  private hasData = false;
  private eventType = '';
  private lastId = '';

  constructor(options: { maxLineChars?: number } = {}) {
    this.maxLine = options.maxLineChars ?? DEFAULT_MAX_LINE_CHARS;
  }

  /** The events completed by these bytes. */
  push(chunk: Uint8Array): SSEEvent[] {
    this.buf += this.decoder.decode(chunk, { stream: true });
    return this.lines(false);
  }

  /** The stream ended: events completed by what the decoder still held. */
  end(): SSEEvent[] {
    this.buf += this.decoder.decode();
    // Whatever is left after this (a line without its end, an event without its blank line) is discarded.
    return this.lines(true);
  }

  /** Handles one complete line; returns an event when the line was the blank line ending one. */
  private line(text: string): SSEEvent | undefined {
    if (text === '') {
      if (!this.hasData) {
        this.eventType = '';
        return undefined;
      }
      const ev: SSEEvent = { data: this.data };
      if (this.eventType) ev.event = this.eventType;
      if (this.lastId) ev.id = this.lastId;
      this.data = '';
      this.hasData = false;
      this.eventType = '';
      return ev;
    }
    if (text.charCodeAt(0) === 0x3a /* ':' */) return undefined;
    const colon = text.indexOf(':');
    let field: string;
    let value: string;
    if (colon < 0) {
      field = text;
      value = '';
    } else {
      field = text.slice(0, colon);
      value = text.charCodeAt(colon + 1) === 0x20 ? text.slice(colon + 2) : text.slice(colon + 1);
    }
    switch (field) {
      case 'data':
        this.data = this.hasData ? `${this.data}\n${value}` : value;
        this.hasData = true;
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      default:
        break; // retry and unknown fields
    }
    return undefined;
  }

  private lines(final: boolean): SSEEvent[] {
    const out: SSEEvent[] = [];
    const buf = this.buf;
    let start = 0;
    if (this.skipLF && buf.length > 0) {
      if (buf.charCodeAt(0) === 0x0a) start = 1;
      this.skipLF = false;
    }
    let nextCR = buf.indexOf('\r', start);
    let nextLF = buf.indexOf('\n', start);
    for (;;) {
      if (nextCR >= 0 && nextCR < start) nextCR = buf.indexOf('\r', start);
      if (nextLF >= 0 && nextLF < start) nextLF = buf.indexOf('\n', start);
      let end: number;
      if (nextCR < 0) end = nextLF;
      else if (nextLF < 0) end = nextCR;
      else end = Math.min(nextCR, nextLF);
      if (end < 0) break;
      let next = end + 1;
      if (end === nextCR) {
        if (end + 1 < buf.length) {
          if (buf.charCodeAt(end + 1) === 0x0a) next = end + 2;
        } else if (!final) {
          this.skipLF = true;
        }
      }
      const ev = this.line(buf.slice(start, end));
      start = next;
      if (ev) out.push(ev);
    }
    this.buf = start === 0 ? buf : buf.slice(start);
    return out;
  }

  /** Throws SSEParseError if the unfinished line is already longer than allowed. */
  check(): void {
    if (this.buf.length > this.maxLine) throw new SSEParseError(`SSE line longer than ${this.maxLine} characters`);
  }
}

export async function* parseSSE(body: AsyncIterable<Uint8Array>, options: { maxLineChars?: number } = {}): AsyncGenerator<SSEEvent> {
  const decoder = new SSEDecoder(options);
  for await (const chunk of body) {
    yield* decoder.push(chunk);
    decoder.check();
  }
  yield* decoder.end();
  decoder.check();
}
