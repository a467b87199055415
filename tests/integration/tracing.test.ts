import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * One request id end to end (docs/observability.md "Request ids and traces"): the edge continues
 * the client's W3C `traceparent` (or starts a trace), and the edge's log lines and those of every
 * worker that handled the request (chat worker, then the proxy worker it called) carry the same
 * `trace_id`. With an OTLP endpoint configured, each process exports its span to an OTLP/HTTP
 * receiver run by this test, and the spans link up: edge → chat worker → proxy worker.
 */

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const TRACE_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const loud = { LOG_LEVEL: 'debug', LOG_REQUESTS: 'true' };

/** The JSON log lines of `proc` carrying `traceId`. */
function linesOf(proc: Proc, traceId: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of proc.log().split('\n')) {
    if (!line.includes(traceId)) continue;
    try {
      const j = JSON.parse(line) as Record<string, unknown>;
      if (j.trace_id === traceId) out.push(j);
    } catch {
      // not a JSON line (a stack trace's continuation): skip
    }
  }
  return out;
}

/** Each process of a stack: an edge with the LLM and chat faces, a chat worker, a proxy worker behind a fake OpenAI. */
async function startStack(stack: Stack, upstream: string, upstreamKey: string, extra: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'tracing-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ providers: { fake: { type: 'openai', baseUrl: upstream, apiKeyEnv: 'FAKE_OPENAI_KEY', models: ['echo'] } }, timeoutMs: 5000 }));
  const llmEnv = { LLMPROXY_CONFIG: config, FAKE_OPENAI_KEY: upstreamKey };
  const proxy = await stack.startProxyWorker({ ...loud, ...extra, ...llmEnv, OPENAI_API_BASE_URLS: upstream, OPENAI_API_KEYS: upstreamKey });
  const chatWorker = await stack.startChatWorker({ ...loud, ...extra });
  const edge = await stack.startEdge({ ...loud, ...extra, ...llmEnv, EDGE_FACES: 'llm,chat' });
  return { proxy, chatWorker, ingest: stack.ingest!, edge };
}

async function llmMessage(edge: Edge, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${edge.proxyUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify({ model: 'fake/echo', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }),
  });
}

async function chatCompletion(edge: Edge, who: Account, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${edge.chatUrl}/api/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${who.token}`, ...headers },
    body: JSON.stringify({ model: 'echo', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
  });
}

const upstreamKey = newKey();
let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;

describe('tracing off (the default): the trace id is in every log line of the request', () => {
  const stack = new Stack();
  let s: Awaited<ReturnType<typeof startStack>>;
  let admin: Account;

  beforeAll(async () => {
    openai = await startFakeOpenAI({ apiKey: upstreamKey });
    s = await startStack(stack, openai.url, upstreamKey, {});
    admin = await chatClient(() => s.edge.chatUrl).signup('Admin');
  });
  afterAll(async () => {
    await stack.close();
  });

  it('a given traceparent: the edge and the proxy worker log its trace id; the answer names the trace', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const r = await llmMessage(s.edge, { traceparent: `00-${traceId}-${parent}-01` });
    expect(r.status).toBe(200);
    await r.text();
    const answered = TRACE_RE.exec(r.headers.get('traceresponse') ?? '');
    expect(answered?.[1]).toBe(traceId);
    expect(answered?.[2]).not.toBe(parent); // the edge's own span
    // The edge's lines (request logging) carry the trace, its own span, and the request id the client got.
    await waitFor(() => linesOf(s.edge.proc, traceId).some((l) => l.msg === 'request completed'), 5000, () => `the edge logged no completed request with the trace:\n${s.edge.proc.log().slice(-3000)}`);
    const edgeLines = linesOf(s.edge.proc, traceId);
    expect(edgeLines.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
    for (const l of edgeLines) {
      expect(l.span_id).toBe(answered?.[2]);
      expect(l.reqId).toBe(r.headers.get('request-id'));
    }
    // The worker's line for the same request: same trace, a span of its own.
    await waitFor(() => linesOf(s.proxy, traceId).length > 0, 5000, () => `the proxy worker logged nothing with trace ${traceId}`);
    const workerLines = linesOf(s.proxy, traceId);
    expect(workerLines.map((l) => l.msg)).toContain('bus request handled');
    for (const l of workerLines) {
      expect(l.span_id).toMatch(/^[0-9a-f]{16}$/);
      expect(l.span_id).not.toBe(answered?.[2]);
    }
    // Nobody else's request carries it.
    expect(linesOf(s.chatWorker, traceId)).toEqual([]);
  });

  it('the trace goes on from the chat worker to the proxy worker it calls', async () => {
    const traceId = hex(16);
    const r = await chatCompletion(s.edge, admin, { traceparent: `00-${traceId}-${hex(8)}-01` });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('data: ');
    expect(TRACE_RE.exec(r.headers.get('traceresponse') ?? '')?.[1]).toBe(traceId);
    await waitFor(
      () => [s.edge.proc, s.chatWorker, s.proxy].every((p) => linesOf(p, traceId).length > 0),
      5000,
      () => `not every process logged trace ${traceId}: edge ${linesOf(s.edge.proc, traceId).length}, chat ${linesOf(s.chatWorker, traceId).length}, proxy ${linesOf(s.proxy, traceId).length}`,
    );
    const spans = [s.edge.proc, s.chatWorker, s.proxy].map((p) => new Set(linesOf(p, traceId).map((l) => l.span_id)));
    // One span per process (each logs all its lines of the request under it), three different spans.
    for (const set of spans) expect(set.size).toBe(1);
    expect(new Set(spans.map((set) => [...set][0])).size).toBe(3);
  });

  it("an upload: the ingest job it queues carries the trace into the ingest worker's lines", async () => {
    const traceId = hex(16);
    const form = new FormData();
    form.append('file', new Blob([`notes ${hex(4)}: tracing reaches the ingest worker`], { type: 'text/plain' }), 'notes.txt');
    const r = await fetch(`${s.edge.chatUrl}/api/v1/files/`, { method: 'POST', headers: { authorization: `Bearer ${admin.token}`, traceparent: `00-${traceId}-${hex(8)}-01` }, body: form });
    expect(r.status).toBe(200);
    await r.json();
    await waitFor(() => linesOf(s.ingest, traceId).some((l) => l.msg === 'ingest job done'), 15_000, () => `the ingest worker logged no job with trace ${traceId}:\n${s.ingest.log().slice(-2000)}`);
    expect(linesOf(s.chatWorker, traceId).length).toBeGreaterThan(0);
  });

  it('no traceparent, or an invalid one: a new trace, in the answer and in every log line (never an error)', async () => {
    const invalid = [undefined, `00-${'0'.repeat(32)}-${hex(8)}-01`, `00-${hex(16).toUpperCase()}-${hex(8)}-01`, 'not a traceparent', `ff-${hex(16)}-${hex(8)}-01`];
    const seen = new Set<string>();
    for (const tp of invalid) {
      const r = await llmMessage(s.edge, tp === undefined ? {} : { traceparent: tp });
      expect(r.status, `traceparent ${tp}`).toBe(200);
      await r.text();
      const traceId = TRACE_RE.exec(r.headers.get('traceresponse') ?? '')?.[1];
      expect(traceId, `traceparent ${tp}`).toMatch(/^[0-9a-f]{32}$/);
      if (tp) expect(tp.toLowerCase()).not.toContain(traceId!);
      seen.add(traceId!);
      await waitFor(
        () => linesOf(s.edge.proc, traceId!).some((l) => l.msg === 'request completed') && linesOf(s.proxy, traceId!).length > 0,
        5000,
        () => `trace ${traceId} (traceparent ${tp}) not logged by both the edge and the proxy worker`,
      );
    }
    expect(seen.size).toBe(invalid.length);
  });
});

/** An OTLP/HTTP receiver: every span it is sent, as the exporter sends them (JSON or protobuf). */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

function attrValue(v: Record<string, unknown> | undefined): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('boolValue' in v) return v.boolValue;
  if ('doubleValue' in v) return v.doubleValue;
  return v;
}

function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; contentTypes: Set<string>; close(): Promise<void>; server: Server }> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      contentTypes.add(`${req.method} ${req.url} ${req.headers['content-type'] ?? ''}`);
      if (req.method === 'POST' && req.url === '/v1/traces' && String(req.headers['content-type']).startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: { key: string; value: Record<string, unknown> }[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attrValue(rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value));
          for (const ss of rs.scopeSpans ?? []) {
            for (const sp of ss.spans ?? []) {
              const attributes: Record<string, unknown> = {};
              for (const a of (sp.attributes ?? []) as { key: string; value: Record<string, unknown> }[]) attributes[a.key] = attrValue(a.value);
              spans.push({ service, traceId: String(sp.traceId), spanId: String(sp.spanId), parentSpanId: String(sp.parentSpanId ?? ''), name: String(sp.name), attributes });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address() as { port: number };
      resolve({ url: `http://127.0.0.1:${addr.port}`, spans, contentTypes, server, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}

describe('tracing on (OTEL_EXPORTER_OTLP_ENDPOINT): spans arrive linked edge → worker', () => {
  const stack = new Stack();
  let s: Awaited<ReturnType<typeof startStack>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let admin: Account;

  beforeAll(async () => {
    openai ??= await startFakeOpenAI({ apiKey: upstreamKey });
    receiver = await startReceiver();
    s = await startStack(stack, openai.url, upstreamKey, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' });
    admin = await chatClient(() => s.edge.chatUrl).signup('Admin');
  });
  afterAll(async () => {
    await stack.close();
    await receiver?.close();
    await openai?.close();
  });

  const spansOf = (traceId: string) => receiver.spans.filter((sp) => sp.traceId === traceId);

  it('says so at start', () => {
    for (const p of [s.edge.proc, s.chatWorker, s.proxy]) expect(p.log()).toContain('OpenTelemetry traces exported over OTLP/HTTP');
  });

  it('a chat completion with a traceparent: edge span (face, route, status) → chat worker span → proxy worker span', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const r = await chatCompletion(s.edge, admin, { traceparent: `00-${traceId}-${parent}-01` });
    expect(r.status).toBe(200);
    await r.text();
    const edgeSpanId = TRACE_RE.exec(r.headers.get('traceresponse') ?? '')?.[2];
    await waitFor(() => spansOf(traceId).length >= 3, 10_000, () => `spans of ${traceId}: ${JSON.stringify(spansOf(traceId))}; received: ${[...receiver.contentTypes].join(', ')}`);
    const spans = spansOf(traceId);
    const edgeSpan = spans.find((sp) => sp.service === 'edge');
    const chatSpan = spans.find((sp) => sp.service === 'chat-worker');
    const proxySpan = spans.find((sp) => sp.service === 'llm-worker');
    expect(edgeSpan).toMatchObject({
      spanId: edgeSpanId,
      parentSpanId: parent,
      name: 'POST /api/chat/completions',
      attributes: { 'gatehouse.face': 'chat', 'http.route': '/api/chat/completions', 'http.response.status_code': 200, 'http.request.method': 'POST' },
    });
    expect(chatSpan).toMatchObject({ parentSpanId: edgeSpanId, name: 'chat.completions.create', attributes: { 'gatehouse.status': 200 } });
    expect(proxySpan?.parentSpanId).toBe(chatSpan?.spanId);
    // The log lines carry the span ids the spans have.
    await waitFor(() => linesOf(s.chatWorker, traceId).length > 0, 5000, () => 'the chat worker logged nothing with the trace');
    expect(new Set(linesOf(s.chatWorker, traceId).map((l) => l.span_id))).toEqual(new Set([chatSpan?.spanId]));
  });

  it('a client that goes away mid-stream: the edge span still ends (499), and the worker span with it', async () => {
    const traceId = hex(16);
    const ac = new AbortController();
    const r = await fetch(`${s.edge.chatUrl}/api/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.token}`, traceparent: `00-${traceId}-${hex(8)}-01` },
      body: JSON.stringify({ model: 'slow', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight' }] }),
      signal: ac.signal,
    });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    await reader.read(); // the first bytes, then the client leaves
    ac.abort();
    await reader.cancel().catch(() => undefined);
    await waitFor(() => spansOf(traceId).some((sp) => sp.service === 'edge') && spansOf(traceId).some((sp) => sp.service === 'chat-worker'), 10_000, () => `spans of ${traceId}: ${JSON.stringify(spansOf(traceId))}`);
    const edgeSpan = spansOf(traceId).find((sp) => sp.service === 'edge');
    expect(edgeSpan).toMatchObject({ name: 'POST /api/chat/completions', attributes: { 'http.response.status_code': 499 } });
    expect(spansOf(traceId).find((sp) => sp.service === 'chat-worker')).toMatchObject({ parentSpanId: edgeSpan?.spanId, attributes: { 'gatehouse.status': 499 } });
  });

  it('a request without a traceparent: a root span at the edge, the worker span its child', async () => {
    const r = await llmMessage(s.edge);
    expect(r.status).toBe(200);
    await r.text();
    const m = TRACE_RE.exec(r.headers.get('traceresponse') ?? '');
    const traceId = m?.[1] ?? '';
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    await waitFor(() => spansOf(traceId).length >= 2, 10_000, () => `spans of ${traceId}: ${JSON.stringify(spansOf(traceId))}`);
    const edgeSpan = spansOf(traceId).find((sp) => sp.service === 'edge');
    const proxySpan = spansOf(traceId).find((sp) => sp.service === 'llm-worker');
    expect(edgeSpan).toMatchObject({ spanId: m?.[2], parentSpanId: '', name: 'POST /v1/messages', attributes: { 'gatehouse.face': 'llm', 'http.response.status_code': 200 } });
    expect(proxySpan?.parentSpanId).toBe(edgeSpan?.spanId);
  });
});
