import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a fake upstream received. */
export interface Recorded {
  method: string;
  /** Path and query as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  /** OpenAI fake: the parsed JSON body (the text when it does not parse). Anthropic fake: the raw bytes. */
  body: unknown;
  /** The body bytes exactly as received. */
  raw: Buffer;
  /** The parsed JSON body, undefined when it did not parse. */
  json: unknown;
  /** The client went away before the answer was complete (cancellation, timeouts). */
  aborted: boolean;
  /** The answer was sent completely. */
  finished: boolean;
  /** Date.now() when the request body had arrived. */
  at: number;
}

export interface FakeUpstream {
  /** Base URL clients are configured with. */
  url: string;
  port: number;
  /** Every request, oldest first (the oldest are dropped beyond `maxRecorded`). */
  requests: Recorded[];
  /** Stops listening and destroys every open connection (hanging and streaming ones included). */
  close(): Promise<void>;
}

export interface FakeOptions {
  /** When set, requests must carry it (OpenAI: `Authorization: Bearer`; Anthropic: x-api-key or bearer). */
  apiKey?: string;
  /** Recorded requests kept (benchmarks send many); default 10 000. */
  maxRecorded?: number;
}

/** Per-request context handed to a fake's handler. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  rec: Recorded;
  /** True once the client disconnected or the server closes: stop writing. */
  readonly gone: boolean;
  /** Waits `ms` unless the client goes away first (resolves either way; check `gone`). */
  sleep(ms: number): Promise<void>;
}

export async function startFake(
  options: FakeOptions & { urlSuffix: string },
  handle: (ex: Exchange) => void | Promise<void>,
): Promise<FakeUpstream> {
  const requests: Recorded[] = [];
  const maxRecorded = options.maxRecorded ?? 10_000;
  const timers = new Set<NodeJS.Timeout>();
  const openResponses = new Set<Promise<void>>();
  let closing = false;

  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('error', () => {});
    res.on('error', () => {});
    req.on('end', () => {
      const raw = Buffer.concat(parts);
      let json: unknown;
      try {
        json = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        json = undefined;
      }
      const rec: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: json, raw, json, aborted: false, finished: false, at: Date.now() };
      requests.push(rec);
      if (requests.length > maxRecorded) requests.splice(0, requests.length - maxRecorded);
      let gone = false;
      const wakers = new Set<() => void>();
      res.on('finish', () => {
        rec.finished = true;
      });
      const closed = new Promise<void>((resolve) => {
        res.on('close', () => {
          if (!res.writableFinished) rec.aborted = true;
          gone = true;
          for (const wake of wakers) wake();
          openResponses.delete(closed);
          resolve();
        });
      });
      openResponses.add(closed);
      const ex: Exchange = {
        req,
        res,
        rec,
        get gone() {
          return gone || closing;
        },
        sleep: (ms) =>
          new Promise<void>((resolve) => {
            if (gone || closing) return resolve();
            const wake = () => {
              clearTimeout(timer);
              timers.delete(timer);
              wakers.delete(wake);
              resolve();
            };
            const timer = setTimeout(wake, ms);
            timers.add(timer);
            wakers.add(wake);
          }),
      };
      Promise.resolve(handle(ex)).catch((err: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`fake upstream failed: ${(err as Error).message}`);
        } else {
          res.destroy();
        }
      });
    });
  });
  // Clients reuse connections; keep them open longer than Node's 5 s default so the benchmarks do not race it.
  server.keepAliveTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}${options.urlSuffix}`,
    port,
    requests,
    close: async () => {
      if (closing) return;
      closing = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      // Let the responses' own 'close' handlers run (bounded), so `aborted` is final once close() resolved.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(openResponses), new Promise((resolve) => (timer = setTimeout(resolve, 1000)))]);
      clearTimeout(timer);
    },
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

/** Sends the headers and half of a JSON body (content-length for all of it), then destroys the socket. */
export async function sendJsonCut(ex: Exchange, body: unknown, headers: Record<string, string> = {}): Promise<void> {
  const text = Buffer.from(JSON.stringify(body));
  ex.res.writeHead(200, { ...headers, 'content-type': 'application/json', 'content-length': String(text.length) });
  await new Promise<void>((resolve) => ex.res.write(text.subarray(0, Math.floor(text.length / 2)), () => resolve()));
  ex.req.socket.destroy();
}

/** Writes and resolves once the bytes were handed to the socket (or the client is gone). */
export function write(ex: Exchange, text: string): Promise<void> {
  if (ex.gone) return Promise.resolve();
  return new Promise((resolve) => {
    ex.res.write(text, () => resolve());
  });
}

export function randomId(prefix: string, length = 24): string {
  return `${prefix}${randomBytes(length).toString('base64url').slice(0, length)}`;
}

/** Splits text into word-ish pieces, at least `min` of them when the text has that many characters. */
export function pieces(text: string, min = 3): string[] {
  const words = text.match(/\s*\S+/g) ?? [];
  const rest = text.slice(words.join('').length);
  if (words.length === 0) return [text];
  if (rest) words[words.length - 1] += rest;
  const chars = Array.from(text);
  if (words.length >= min || chars.length < min) return words;
  const size = Math.ceil(chars.length / min);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

/** Rough token count (~4 characters a token), at least 1. */
export function tokenCount(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The text of a chat/messages content value: a string or an array of parts with `text`. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .filter(Boolean)
    .join('\n');
}

/** The text of the last message with role "user" in `messages`. */
export function lastUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown } | undefined;
    if (m && m.role === 'user') return contentText(m.content);
  }
  return '';
}

/** All message text in a body (for the prompt token estimate). */
export function allText(body: { system?: unknown; messages?: unknown }): string {
  const parts = [contentText(body.system)];
  if (Array.isArray(body.messages)) for (const m of body.messages) parts.push(contentText((m as { content?: unknown } | undefined)?.content));
  return parts.join('\n');
}
