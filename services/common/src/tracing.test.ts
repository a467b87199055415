import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { continueTrace, newSpanId, newTraceId, otlpTracesEndpoint, parseTraceparent, startSpan, tracingEnabled } from './tracing.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('parseTraceparent (W3C Trace Context)', () => {
  it('reads a valid version-00 header', () => {
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-01`)).toEqual({ traceId: TRACE, parentId: PARENT, flags: '01' });
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-00`)).toEqual({ traceId: TRACE, parentId: PARENT, flags: '00' });
  });

  it('reads a later version, fields after the flags included, keeping only the sampled bit', () => {
    expect(parseTraceparent(`01-${TRACE}-${PARENT}-03-what-comes-next`)).toEqual({ traceId: TRACE, parentId: PARENT, flags: '01' });
    expect(parseTraceparent(`cc-${TRACE}-${PARENT}-02`)).toEqual({ traceId: TRACE, parentId: PARENT, flags: '00' });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['version ff', `ff-${TRACE}-${PARENT}-01`],
    ['version not hex', `0g-${TRACE}-${PARENT}-01`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ['short trace id', `00-${TRACE.slice(1)}-${PARENT}-01`],
    ['long parent id', `00-${TRACE}-${PARENT}0-01`],
    ['flags not hex', `00-${TRACE}-${PARENT}-0x`],
    ['version 00 with more after the flags', `00-${TRACE}-${PARENT}-01-extra`],
    ['later version with junk right after the flags', `01-${TRACE}-${PARENT}-01x`],
    ['wrong separators', `00_${TRACE}_${PARENT}_01`],
    ['a repeated header (node joins them)', `00-${TRACE}-${PARENT}-01, 00-${TRACE}-${PARENT}-01`],
    ['spaces around it', ` 00-${TRACE}-${PARENT}-01`],
  ])('refuses %s', (_why, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });
});

describe('parseTraceparent on anything a client may send', () => {
  it('never throws, and what it accepts is well-formed and continues as a valid version-00 header', () => {
    const chars = (alphabet: string, n: number) => fc.string({ unit: fc.constantFrom(...alphabet.split('')), minLength: n, maxLength: n });
    // Well-formed headers (lower-case hex, later versions with more fields), near misses, and noise.
    const shaped = (alphabet: string) =>
      fc
        .tuple(chars(alphabet, 2), chars(alphabet, 32), chars(alphabet, 16), chars(alphabet, 2), fc.oneof(fc.constant(''), fc.string({ maxLength: 8 })))
        .map(([v, t, p, f, rest]) => `${v}-${t}-${p}-${f}${rest}`);
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(shaped('0123456789abcdef'), shaped('0123456789abcdefABCDEF-x'), fc.string({ maxLength: 200 })), (h) => {
        const p = parseTraceparent(h);
        if (!p) return;
        accepted++;
        expect(p.traceId).toMatch(/^[0-9a-f]{32}$/);
        expect(p.parentId).toMatch(/^[0-9a-f]{16}$/);
        expect(p.flags).toMatch(/^[0-9a-f]{2}$/);
        expect(h.startsWith('ff')).toBe(false);
        const next = continueTrace(h);
        expect(parseTraceparent(next.traceparent)).toEqual({ traceId: p.traceId, parentId: next.spanId, flags: p.flags });
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(100);
  });
});

describe('continueTrace', () => {
  it('continues a valid parent with a span of its own', () => {
    const t = continueTrace(`00-${TRACE}-${PARENT}-01`);
    expect(t.traceId).toBe(TRACE);
    expect(t.parentId).toBe(PARENT);
    expect(t.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(t.spanId).not.toBe(PARENT);
    expect(t.traceparent).toBe(`00-${TRACE}-${t.spanId}-01`);
    expect(t.logFields).toEqual({ trace_id: TRACE, span_id: t.spanId });
    expect(parseTraceparent(t.traceparent)).toEqual({ traceId: TRACE, parentId: t.spanId, flags: '01' });
  });

  it('starts a new trace (sampled) when the header is absent or invalid: never an error', () => {
    for (const h of [undefined, 'nonsense', `00-${'0'.repeat(32)}-${PARENT}-01`]) {
      const t = continueTrace(h);
      expect(t.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(t.traceId).not.toBe(TRACE);
      expect(t.parentId).toBeUndefined();
      expect(t.flags).toBe('01');
      expect(parseTraceparent(t.traceparent)?.traceId).toBe(t.traceId);
    }
  });

  it('draws distinct ids across many refills of the random pool', () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      traces.add(newTraceId());
      spans.add(newSpanId());
    }
    expect(traces.size).toBe(2000);
    expect(spans.size).toBe(2000);
    for (const s of spans) expect(s).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('OpenTelemetry switch', () => {
  it('is off without an OTLP endpoint, and off when disabled', () => {
    expect(otlpTracesEndpoint({})).toBeUndefined();
    expect(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe('http://127.0.0.1:4318');
    expect(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' })).toBe('http://c:4318/v1/traces');
    expect(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('starts no span and loads no SDK when off', () => {
    expect(tracingEnabled()).toBe(false);
    expect(startSpan('x', 'server', `00-${TRACE}-${PARENT}-01`)).toBeUndefined();
  });
});
