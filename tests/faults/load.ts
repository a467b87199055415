import { randomBytes } from 'node:crypto';
import type { Edge } from '../support/local-stack.ts';

/**
 * The steady load of the fault suite: bounded loops (a deadline and a request cap) against the
 * four faces of one edge on loopback, every answer checked and sorted by kind. A request that
 * outlives its face's limit (idle limit plus a margin) is aborted and counted as `hung`: a
 * failure. Acknowledged writes (2xx) are remembered by id so the scenario can look for them.
 */
export type Face = 'speech' | 'llm' | 'vector' | 'chat';

export class Tally {
  readonly sent: Record<string, number> = {};
  /** `face op → kind → count`, kinds such as `ok`, `503 clean`, `hung`, `500 service_error`. */
  readonly kinds: Record<string, Record<string, number>> = {};
  /** Acknowledged writes by kind (vector points, memories, chats, files). */
  readonly acked: Record<string, (string | number)[]> = {};
  /** Kinds that break the rules (hangs, resets, 500s, errors outside the face's format). */
  readonly bad: string[] = [];

  record(face: Face, op: string, kind: string, clean: boolean, detail = ''): void {
    const k = `${face} ${op}`;
    this.kinds[k] ??= {};
    this.kinds[k]![kind] = (this.kinds[k]![kind] ?? 0) + 1;
    if (!clean && this.bad.length < 50) this.bad.push(`${k}: ${kind} ${detail.slice(0, 300)}`);
  }
  ack(what: string, id: string | number): void {
    (this.acked[what] ??= []).push(id);
  }
  count(face: Face, op: string): void {
    const k = `${face} ${op}`;
    this.sent[k] = (this.sent[k] ?? 0) + 1;
  }
  total(): number {
    return Object.values(this.sent).reduce((a, b) => a + b, 0);
  }
  /** What the scenario checked, printed for the run's log (docs/faults.md shows one). */
  print(title: string, found: Record<string, { acked: number; found: number }> = {}, extra: string[] = []): string {
    const lines = [`[faults] ${title}`, `  requests sent: ${this.total()}`];
    for (const k of Object.keys(this.sent).sort()) {
      const kinds = Object.entries(this.kinds[k] ?? {})
        .sort((a, b) => b[1] - a[1])
        .map(([kind, n]) => `${kind} ${n}`)
        .join(', ');
      lines.push(`    ${k.padEnd(22)} ${String(this.sent[k]).padStart(5)}  ${kinds}`);
    }
    for (const [what, f] of Object.entries(found)) lines.push(`  writes ${what.padEnd(16)} acknowledged ${f.acked}, found ${f.found}`);
    lines.push(...extra.map((e) => `  ${e}`));
    if (this.bad.length) lines.push(`  FAILURES:`, ...this.bad.map((b) => `    ${b}`));
    const text = lines.join('\n');
    console.log(text);
    return text;
  }
}

/** The error envelope each face owes its clients (its real system's wire format). */
export function inFaceFormat(face: Face, body: string, status = 0): boolean {
  // Qdrant answers its auth refusals in plain text, not its JSON envelope.
  if (face === 'vector' && (status === 401 || status === 403)) return body.length > 0 && !body.startsWith('{');
  let j: any;
  try {
    j = JSON.parse(body);
  } catch {
    return false;
  }
  if (face === 'speech') return typeof j?.error?.message === 'string' && typeof j?.error?.type === 'string';
  if (face === 'llm') return j?.type === 'error' && typeof j?.error?.type === 'string' && typeof j?.error?.message === 'string';
  if (face === 'vector') return typeof j?.status?.error === 'string' && 'time' in j;
  return typeof j?.detail === 'string';
}

/**
 * Refusals a fault may cause: 503 (no worker, store down, gate unavailable), 504 (the worker
 * took the request and never answered: NATS cannot tell a killed responder from a slow one, so
 * the edge waits its limit and then answers in the face's format) and 502 (an upstream, or a
 * stream that ended without its end frame).
 */
const CLEAN_FAILURES = new Set([502, 503, 504]);

export interface Call {
  face: Face;
  op: string;
  url: string;
  init: RequestInit;
  /** Longest silence (before the answer, or between two pieces of it): the face's limit plus a margin; past it, `hung`. */
  limitMs: number;
  /** On 2xx: check the body (throw on a wrong answer) and return the write's id to remember, if any. */
  ok?: (body: string, status: number) => string | number | undefined | void;
  /** Which acknowledged-write list the id goes to. */
  write?: string;
  /** Also allowed: statuses a scenario expects (e.g. 401 from an enforced gate). */
  expect?: number[];
  /** A request without a key to an enforced gate: any 2xx means the gate was open. */
  refuse?: boolean;
}

export async function send(t: Tally, c: Call): Promise<number | 'hung' | 'reset'> {
  t.count(c.face, c.op);
  const ac = new AbortController();
  // An idle limit, as the faces' own: silence before the answer, or between two pieces of a stream.
  let timer = setTimeout(() => ac.abort(), c.limitMs);
  let status = 0;
  let body = '';
  try {
    const r = await fetch(c.url, { ...c.init, signal: ac.signal });
    status = r.status;
    const reader = r.body!.getReader();
    const text = new TextDecoder();
    for (;;) {
      clearTimeout(timer);
      timer = setTimeout(() => ac.abort(), c.limitMs);
      const { done, value } = await reader.read();
      if (done) break;
      body += text.decode(value, { stream: true });
    }
  } catch (err) {
    clearTimeout(timer);
    if (ac.signal.aborted) {
      t.record(c.face, c.op, status ? `${status} then hung` : 'hung', false, `${c.url} silent for ${c.limitMs} ms`);
      return 'hung';
    }
    // Headers came, then the body was cut: for an audio stream that is the only signal left.
    const kind = status ? `${status} then cut` : 'reset';
    t.record(c.face, c.op, kind, status !== 0 && c.face === 'speech', `${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? '')}`);
    return status || 'reset';
  }
  clearTimeout(timer);
  if (status >= 200 && status < 300 && c.refuse) {
    t.record(c.face, c.op, `${status} GATE OPEN`, false, body);
  } else if (status >= 200 && status < 300) {
    try {
      const id = c.ok?.(body, status);
      if (id !== undefined && c.write) t.ack(c.write, id);
      t.record(c.face, c.op, streamKind(c.face, body) ?? 'ok', streamKind(c.face, body) === undefined || streamKind(c.face, body)!.endsWith('clean'), body);
    } catch (err) {
      t.record(c.face, c.op, `${status} wrong answer`, false, `${(err as Error).message}: ${body.slice(0, 200)}`);
    }
  } else if (c.expect?.includes(status)) {
    t.record(c.face, c.op, `${status} expected`, inFaceFormat(c.face, body, status), body);
  } else if (CLEAN_FAILURES.has(status) && inFaceFormat(c.face, body, status)) {
    t.record(c.face, c.op, `${status} clean`, true);
  } else {
    t.record(c.face, c.op, `${status}${inFaceFormat(c.face, body, status) ? '' : ' outside the format'}`, false, body);
  }
  return status;
}

/** A streamed Anthropic reply that failed after its 200: an `error` event (clean) or no end at all (cut). */
function streamKind(face: Face, body: string): string | undefined {
  if (face !== 'llm' || !body.startsWith('event:')) return undefined;
  if (body.includes('event: message_stop')) return undefined;
  if (body.includes('event: error')) return `200 then error event, clean`;
  return '200 then cut';
}

/** Run `next()` from `concurrency` loops until `stopAt` or `maxRequests` in all. */
export async function loop(concurrency: number, stopAt: () => boolean, maxRequests: number, next: (i: number) => Promise<unknown>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stopAt() && i < maxRequests) await next(i++);
    }),
  );
}

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

export interface Limits {
  speech: number;
  llm: number;
  vector: number;
  chat: number;
}

/** One request of each face's steady load; `n` makes every write unique. */
export function faceCalls(edge: Edge, limits: Limits, opts: { chatToken: string; collection: string; llmModel: string; keys?: Partial<Record<Face, string>> }) {
  const auth = (face: Face): Record<string, string> => {
    const k = opts.keys?.[face];
    if (!k) return {};
    return face === 'llm' ? { 'x-api-key': k } : face === 'vector' ? { 'api-key': k } : { authorization: `Bearer ${k}` };
  };
  const chatAuth = { authorization: `Bearer ${opts.chatToken}` };
  return {
    speech: (): Call => ({
      face: 'speech',
      op: 'speech',
      url: `${edge.url}/v1/audio/speech`,
      init: json({ model: 'tts-1', voice: 'alloy', input: 'Faults.', response_format: 'pcm' }, auth('speech')),
      limitMs: limits.speech,
      ok: (body) => {
        if (body.length === 0) throw new Error('no audio');
      },
    }),
    llm: (): Call => ({
      face: 'llm',
      op: 'messages stream',
      url: `${edge.proxyUrl}/v1/messages`,
      init: json({ model: opts.llmModel, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'one two three four five' }] }, auth('llm')),
      limitMs: limits.llm,
      ok: (body) => {
        if (!body.includes('event: message_stop') && !body.includes('event: error')) throw new Error('stream without an end');
      },
    }),
    vector: (n: number): Call => ({
      face: 'vector',
      op: 'upsert',
      url: `${edge.vectorUrl}/collections/${opts.collection}/points?wait=true`,
      init: { ...json({ points: [{ id: n + 1, vector: [Math.random(), Math.random(), Math.random(), Math.random()], payload: { n } }] }, auth('vector')), method: 'PUT' },
      limitMs: limits.vector,
      write: 'vector points',
      ok: (body) => {
        if (JSON.parse(body).status !== 'ok') throw new Error('upsert not ok');
        return n + 1;
      },
    }),
    /** A read: the nearest point to a random vector (the collection may still be empty: then no point). */
    vectorQuery: (): Call => ({
      face: 'vector',
      op: 'query',
      url: `${edge.vectorUrl}/collections/${opts.collection}/points/query`,
      init: json({ query: [Math.random(), Math.random(), Math.random(), Math.random()], limit: 3 }, auth('vector')),
      limitMs: limits.vector,
      ok: (body) => {
        const r = JSON.parse(body);
        if (r.status !== 'ok' || !Array.isArray(r.result?.points) || r.result.points.length > 3) throw new Error('query not ok');
      },
    }),
    /** A read: the caller's session (even n) or its folder list (odd n). */
    chatRead: (n: number): Call =>
      n % 2 === 0
        ? {
            face: 'chat',
            op: 'auths (session)',
            url: `${edge.chatUrl}/api/v1/auths/`,
            init: { headers: chatAuth },
            limitMs: limits.chat,
            ok: (body) => {
              if (typeof JSON.parse(body).id !== 'string') throw new Error('no user id');
            },
          }
        : {
            face: 'chat',
            op: 'folders list',
            url: `${edge.chatUrl}/api/v1/folders/`,
            init: { headers: chatAuth },
            limitMs: limits.chat,
            ok: (body) => {
              if (!Array.isArray(JSON.parse(body))) throw new Error('not a list');
            },
          },
    memory: (n: number): Call => ({
      face: 'chat',
      op: 'memories/add',
      url: `${edge.chatUrl}/api/v1/memories/add`,
      init: json({ content: `fault memory ${n}` }, chatAuth),
      limitMs: limits.chat,
      write: 'memories',
      ok: (body) => JSON.parse(body).id as string,
    }),
    chat: (n: number): Call => ({
      face: 'chat',
      op: 'chats/new',
      url: `${edge.chatUrl}/api/v1/chats/new`,
      init: json({ chat: { title: `fault chat ${n}`, history: { currentId: `m${n}`, messages: { [`m${n}`]: { id: `m${n}`, parentId: null, childrenIds: [], role: 'user', content: `message ${n}`, timestamp: 1 } } }, messages: [{ id: `m${n}`, parentId: null, childrenIds: [], role: 'user', content: `message ${n}`, timestamp: 1 }] } }, chatAuth),
      limitMs: limits.chat,
      write: 'chats',
      ok: (body) => JSON.parse(body).id as string,
    }),
    file: (n: number): Call => {
      const form = new FormData();
      form.append('file', new Blob([`fault file ${n} ${randomBytes(8).toString('hex')}\n`], { type: 'text/plain' }), `fault-${n}.txt`);
      return {
        face: 'chat',
        op: 'files upload',
        url: `${edge.chatUrl}/api/v1/files/?process=false`,
        init: { method: 'POST', headers: chatAuth, body: form },
        limitMs: limits.chat,
        write: 'files',
        ok: (body) => JSON.parse(body).id as string,
      };
    },
  };
}
