/**
 * Micro-benchmark of what "one request id end to end" adds per request with tracing off (the
 * default), piece by piece, against what the request id cost before (docs/observability.md):
 *
 *   node --import tsx services/common/src/tracing.bench.ts
 *
 * Each line: best of 7 rounds of N calls, in ns per call.
 */
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders } from 'nats';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { continueTrace, startSpan, TRACEPARENT } from './tracing.ts';

const N = 200_000;
let sink = 0;
function bench(name: string, fn: () => unknown): number {
  let best = Infinity;
  for (let round = 0; round < 7; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      const v = fn();
      if (v === sink) sink++;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / N);
  }
  console.log(`${name.padEnd(72)} ${best.toFixed(0).padStart(6)} ns`);
  return best;
}

const incoming = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${'00f067aa0ba902b7'}-01`;
const contract = 'llm.messages@1';
const log = pino({ level: 'info' }, new Writable({ write: (_c, _e, cb) => cb() })).child({ face: 'llm' });

console.log(`tracing micro-benchmark, node ${process.version}, ${N} calls × 7 rounds`);
console.log('-- pieces');
bench('continueTrace(no header): new trace and span ids', () => continueTrace(undefined));
bench('continueTrace(valid traceparent): parse + new span id', () => continueTrace(incoming));
bench('continueTrace(invalid traceparent): refused, new trace', () => continueTrace('00-zz'));
const t = continueTrace(incoming);
bench('trace.traceparent (the header value sent onwards)', () => t.traceparent);
bench('startSpan with tracing off (the one check on the hot path)', () => startSpan('x', 'server', incoming));

console.log('-- edge, per request: before (request id) vs now (request id + trace)');
const before1 = bench('before: genReqId (randomUUID)', () => randomUUID());
const now1 = bench('now:    genReqId + continueTrace(header)', () => (continueTrace(incoming), randomUUID()));
const before2 = bench("before: Fastify's request logger child({ reqId })", () => log.child({ reqId: 'req_1' }));
const now2 = bench('now:    child({ reqId, trace_id, span_id })', () => log.child({ reqId: 'req_1', trace_id: t.traceId, span_id: t.spanId }));
const before3 = bench('before: bus headers Gh-Contract + Gh-Request-Id, encoded', () => {
  const h = natsHeaders();
  h.set('Gh-Contract', contract);
  h.set('Gh-Request-Id', 'req_0123456789abcdef0123456789abcdef');
  return (h as unknown as { encode(): Uint8Array }).encode(); // what publish does with them
});
const now3 = bench('now:    bus headers Gh-Contract + traceparent, encoded', () => {
  const h = natsHeaders();
  h.set('Gh-Contract', contract);
  h.set(TRACEPARENT, t.traceparent);
  return (h as unknown as { encode(): Uint8Array }).encode(); // what publish does with them
});

console.log('-- worker, per request');
const raw = natsHeaders();
raw.set('Gh-Contract', contract);
raw.set(TRACEPARENT, incoming);
bench("before: ctx.requestId = headers.get('Gh-Request-Id')", () => raw.get('Gh-Request-Id'));
bench("now:    headers.get('traceparent') (trace and logger made only on use)", () => raw.get(TRACEPARENT));
bench('now, when a handler logs: continueTrace + child({ trace_id, span_id })', () => {
  const w = continueTrace(incoming);
  return log.child(w.logFields);
});

const added = now1 - before1 + (now2 - before2) + (now3 - before3);
console.log(`-- edge total added per request (trace + logger bindings + bus header; traceresponse header not included): ${added.toFixed(0)} ns`);
