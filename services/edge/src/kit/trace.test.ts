import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { buildFace } from './face-app.ts';

/** A face whose one route answers the trace it was given; its log lines are kept. */
async function face() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(JSON.parse(String(c))), cb()) }));
  const app = await buildFace(
    { face: 'speech', log, logRequests: true, bodyLimit: 1024, genReqId: () => `req_${lines.length}` },
    async (f) => {
      f.get('/t', async (req) => {
        req.log.info('inside the handler');
        return { traceId: req.trace.traceId, spanId: req.trace.spanId, parentId: req.trace.parentId ?? null, sent: req.trace.traceparent };
      });
    },
    {},
  );
  return { app, lines };
}

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';

describe('edge request trace (kit/trace.ts)', () => {
  it("continues the client's traceparent: the handler, the answer and every log line of the request agree", async () => {
    const { app, lines } = await face();
    const r = await app.inject({ method: 'GET', url: '/t', headers: { traceparent: `00-${TRACE}-${PARENT}-01` } });
    expect(r.statusCode).toBe(200);
    const body = r.json() as { traceId: string; spanId: string; parentId: string | null; sent: string };
    expect(body).toMatchObject({ traceId: TRACE, parentId: PARENT });
    expect(body.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(body.sent).toBe(`00-${TRACE}-${body.spanId}-01`); // what goes on the bus: the edge's span is the parent
    expect(r.headers.traceresponse).toBe(body.sent);
    const mine = lines.filter((l) => l.reqId !== undefined);
    expect(mine.map((l) => l.msg)).toEqual(['incoming request', 'inside the handler', 'request completed']);
    for (const l of mine) expect(l).toMatchObject({ trace_id: TRACE, span_id: body.spanId, face: 'speech' });
    await app.close();
  });

  it('starts a new trace for a missing or invalid traceparent, answering normally', async () => {
    const { app, lines } = await face();
    const ids = new Set<string>();
    for (const headers of [{}, { traceparent: `00-${TRACE.toUpperCase()}-${PARENT}-01` }, { traceparent: 'garbage' }, { traceparent: `00-${TRACE}-${'0'.repeat(16)}-01` }]) {
      const r = await app.inject({ method: 'GET', url: '/t', headers });
      expect(r.statusCode).toBe(200);
      const body = r.json() as { traceId: string; parentId: string | null };
      expect(body.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(body.traceId).not.toBe(TRACE);
      expect(body.parentId).toBeNull();
      expect(String(r.headers.traceresponse)).toContain(body.traceId);
      ids.add(body.traceId);
      expect(lines.filter((l) => l.trace_id === body.traceId).map((l) => l.msg)).toEqual(['incoming request', 'inside the handler', 'request completed']);
    }
    expect(ids.size).toBe(4);
    await app.close();
  });

  it('404s of unknown paths carry a trace too', async () => {
    const { app, lines } = await face();
    const r = await app.inject({ method: 'GET', url: '/nowhere', headers: { traceparent: `00-${TRACE}-${PARENT}-00` } });
    expect(r.statusCode).toBe(404);
    expect(String(r.headers.traceresponse)).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-00$`));
    expect(lines.filter((l) => l.trace_id === TRACE).length).toBeGreaterThanOrEqual(2);
    await app.close();
  });
});
