import { createParser, type EventSourceParser } from 'eventsource-parser';

/**
 * A streaming Server-Sent Events parser (eventsource-parser behind this module's interface) following the WHATWG event-stream rules
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

/** Longest unfinished line (with the data of its event so far) held while waiting for its end; beyond it the stream is not SSE worth reading. */
export const DEFAULT_MAX_LINE_CHARS = 16 * 1024 * 1024;

/**
 * The same parser, fed synchronously: `push` takes the bytes of one read and returns the events they
 * completed (all of them at once, so a caller can forward one read's events together); `end` takes
 * the end of the stream. After handling what `push` returned, call `check()`: it throws
 * SSEParseError when the line still waiting for its end is longer than `maxLineChars` (the events
 * before it are not lost).
 */
export class SSEDecoder {
  private readonly decoder = new TextDecoder('utf-8');
  private readonly parser: EventSourceParser;
  private out: SSEEvent[] = [];
  private lastId = '';
  private overflow: SSEParseError | undefined;
  private endsInCR = false;

  constructor(options: { maxLineChars?: number } = {}) {
    const max = options.maxLineChars ?? DEFAULT_MAX_LINE_CHARS;
    this.parser = createParser({
      // The parser forgets an event's id after dispatching it; the spec keeps the last one.
      onEvent: (ev) => {
        if (ev.id !== undefined) this.lastId = ev.id;
        const out: SSEEvent = { data: ev.data };
        if (ev.event) out.event = ev.event;
        if (this.lastId) out.id = this.lastId;
        this.out.push(out);
      },
      onError: (err) => {
        if (err.type === 'max-buffer-size-exceeded') this.overflow ??= new SSEParseError(`SSE line longer than ${max} characters`);
      },
      maxBufferSize: max,
    });
  }

  /** The events completed by these bytes. */
  push(chunk: Uint8Array): SSEEvent[] {
    this.feed(this.decoder.decode(chunk, { stream: true }));
    return this.take();
  }

  /** The stream ended: events completed by what the decoder still held. */
  end(): SSEEvent[] {
    this.feed(this.decoder.decode());
    // A final '\r' ends its line, but the parser holds it back (it could be the first half of '\r\n').
    if (this.endsInCR) this.parser.feed('\n');
    // Whatever is left after this (a line without its end, an event without its blank line) is discarded.
    return this.take();
  }

  private feed(text: string): void {
    if (!text) return;
    this.endsInCR = text.charCodeAt(text.length - 1) === 0x0d;
    this.parser.feed(text);
  }

  private take(): SSEEvent[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  /** Throws SSEParseError if the unfinished line is already longer than allowed. */
  check(): void {
    if (this.overflow) throw this.overflow;
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
