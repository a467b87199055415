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

export async function* parseSSE(body: AsyncIterable<Uint8Array>, options: { maxLineChars?: number } = {}): AsyncGenerator<SSEEvent> {
  const maxLine = options.maxLineChars ?? DEFAULT_MAX_LINE_CHARS;
  const decoder = new TextDecoder('utf-8');
  let buf = '';
  let skipLF = false; // the previous chunk ended in '\r': a '\n' opening the next one belongs to it

  let data = '';
  let hasData = false;
  let eventType = '';
  let lastId = '';

  /** Handles one complete line; returns an event when the line was the blank line ending one. */
  const line = (text: string): SSEEvent | undefined => {
    if (text === '') {
      if (!hasData) {
        eventType = '';
        return undefined;
      }
      const ev: SSEEvent = { data };
      if (eventType) ev.event = eventType;
      if (lastId) ev.id = lastId;
      data = '';
      hasData = false;
      eventType = '';
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
        data = hasData ? `${data}\n${value}` : value;
        hasData = true;
        break;
      case 'event':
        eventType = value;
        break;
      case 'id':
        if (!value.includes('\0')) lastId = value;
        break;
      default:
        break; // retry and unknown fields
    }
    return undefined;
  };

  function* lines(final: boolean): Generator<SSEEvent> {
    let start = 0;
    if (skipLF && buf.length > 0) {
      if (buf.charCodeAt(0) === 0x0a) start = 1;
      skipLF = false;
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
          skipLF = true;
        }
      }
      const ev = line(buf.slice(start, end));
      start = next;
      if (ev) yield ev;
    }
    buf = start === 0 ? buf : buf.slice(start);
    if (buf.length > maxLine) throw new SSEParseError(`SSE line longer than ${maxLine} characters`);
  }

  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    yield* lines(false);
  }
  buf += decoder.decode();
  yield* lines(true);
  // Whatever is left (a line without its end, an event without its blank line) is discarded.
}
