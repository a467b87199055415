import { randomFillSync } from 'node:crypto';
import { BUS_HEADERS } from '@gatehouse/contracts';
import type { Logger } from './logger.ts';
import { commonEnv } from './env.ts';

/**
 * One request id end to end (docs/observability.md "Request ids and traces"): W3C Trace Context.
 * The edge takes a client's `traceparent` (or starts a trace), sends its own on every bus message
 * (header `traceparent`), and each worker continues it for the log lines it writes for that
 * request (`trace_id`, `span_id`) and for the bus calls it makes onwards.
 *
 * OpenTelemetry is loaded only when an OTLP endpoint is configured (`OTEL_EXPORTER_OTLP_ENDPOINT`
 * or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): otherwise no SDK module is imported and a request costs
 * the ids below (a slice of a pooled random buffer) and one header.
 */

/** The bus header: the W3C name, so a NATS-aware tracer reads it too. */
export const TRACEPARENT = BUS_HEADERS.traceparent;

/** What an incoming `traceparent` says: the trace, the caller's span, its flags. */
export interface TraceParent {
  traceId: string;
  parentId: string;
  flags: string;
}

const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_SPAN = '0000000000000000';
const HEX = /^[0-9a-f]+$/;

/**
 * Parse a `traceparent` header as W3C Trace Context (level 1, §3.2) says: `version-traceid-parentid-flags`,
 * lower-case hex; version `ff`, an all-zero trace or parent id, or a version-00 header with anything
 * after the flags are invalid. A later version may carry more fields after a `-`. Invalid → undefined
 * (the caller starts a new trace: never an error).
 */
export function parseTraceparent(h: string | undefined | null): TraceParent | undefined {
  if (typeof h !== 'string' || h.length < 55) return undefined;
  if (h.charCodeAt(2) !== 45 || h.charCodeAt(35) !== 45 || h.charCodeAt(52) !== 45) return undefined; // '-'
  const version = h.slice(0, 2);
  if (version === 'ff' || !HEX.test(version)) return undefined;
  if (h.length > 55 && (version === '00' || h.charCodeAt(55) !== 45)) return undefined;
  const traceId = h.slice(3, 35);
  const parentId = h.slice(36, 52);
  const flags = h.slice(53, 55);
  if (!HEX.test(traceId) || !HEX.test(parentId) || !HEX.test(flags)) return undefined;
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return undefined;
  // Only the sampled bit is defined; a later version's other bits are not passed on.
  return { traceId, parentId, flags: version === '00' ? flags : (parseInt(flags, 16) & 1 ? '01' : '00') };
}

// Ids are slices of a pooled random buffer: one randomFillSync per 170 requests, not one per id.
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;

function randomHex(bytes: number, zero: string): string {
  for (;;) {
    if (poolAt + bytes > POOL_BYTES) {
      randomFillSync(pool);
      poolAt = 0;
    }
    const s = pool.toString('hex', poolAt, (poolAt += bytes));
    if (s !== zero) return s; // all zeros is invalid (W3C): draw again
  }
}

export const newTraceId = (): string => randomHex(16, ZERO_TRACE);
export const newSpanId = (): string => randomHex(8, ZERO_SPAN);

/** This hop's place in a trace: the trace, its own span, and the caller's span (if any). */
export class Trace {
  constructor(
    readonly traceId: string,
    readonly spanId: string,
    readonly flags: string,
    readonly parentId?: string,
  ) {}

  /** The `traceparent` this hop sends onwards (its own span is the parent of the next). */
  get traceparent(): string {
    return `00-${this.traceId}-${this.spanId}-${this.flags}`;
  }

  /** The fields every log line of this request carries. */
  get logFields(): { trace_id: string; span_id: string } {
    return { trace_id: this.traceId, span_id: this.spanId };
  }
}

/** Continue the trace a `traceparent` names with a new span, or start a new trace if it is absent or invalid. */
export function continueTrace(traceparent: string | undefined | null): Trace {
  const p = parseTraceparent(traceparent);
  // A new trace is marked sampled: whoever has tracing on records it.
  return p ? new Trace(p.traceId, newSpanId(), p.flags, p.parentId) : new Trace(newTraceId(), newSpanId(), '01');
}

/** Anything that can say which trace a bus message belongs to (an edge request's Trace, a worker's context). */
export interface TraceCarrier {
  readonly traceparent: string;
}

// ---------------------------------------------------------------------------------------------
// OpenTelemetry, only when configured.

/** A started span: ends once, with the attributes known at its end. */
export interface SpanHandle {
  readonly trace: Trace;
  end(name: string | undefined, attributes: Record<string, string | number>, error?: boolean): void;
}

interface Tracing {
  start(name: string, kind: 'server' | 'consumer', parent: TraceParent | undefined, attributes: Record<string, string | number>): SpanHandle;
  shutdown(): Promise<void>;
}

let tracing: Tracing | undefined;
let loading: Promise<boolean> | undefined;

type OtelVariable = 'OTEL_SDK_DISABLED' | 'OTEL_TRACES_EXPORTER' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_EXPORTER_OTLP_ENDPOINT';

/** Where spans go, from the standard variables; undefined = tracing off. */
export function otlpTracesEndpoint(env: Partial<Record<OtelVariable, string>> = commonEnv()): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || undefined;
}

/** Spans are being recorded (initTracing found an endpoint and loaded the SDK). */
export function tracingEnabled(): boolean {
  return tracing !== undefined;
}

/**
 * Load the OpenTelemetry SDK and its OTLP/HTTP exporter if an endpoint is configured (idempotent;
 * resolves false, having imported nothing, when none is). The exporter reads the standard
 * variables itself (endpoint, headers, timeout; `OTEL_BSP_*` for batching, `OTEL_TRACES_SAMPLER`).
 * `service` is the default `service.name` (`OTEL_SERVICE_NAME` wins).
 */
export function initTracing(service: string, log?: Logger): Promise<boolean> {
  if (!otlpTracesEndpoint()) return Promise.resolve(false);
  // Tracing that cannot start (a bad variable) is reported, never a reason not to serve.
  return (loading ??= loadTracing(service, log).catch((err: unknown) => {
    log?.warn({ err: (err as Error).message }, 'OpenTelemetry tracing not started');
    return false;
  }));
}

async function loadTracing(service: string, log?: Logger): Promise<boolean> {
  const [api, sdk, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': commonEnv().OTEL_SERVICE_NAME || service }),
    spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer = provider.getTracer('gatehouse');
  const kinds = { server: api.SpanKind.SERVER, consumer: api.SpanKind.CONSUMER };
  tracing = {
    start(name, kind, parent, attributes) {
      // The parent is passed explicitly (no context manager, no async hooks).
      const ctx = parent
        ? api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: parent.traceId, spanId: parent.parentId, traceFlags: parseInt(parent.flags, 16), isRemote: true })
        : api.ROOT_CONTEXT;
      const span = tracer.startSpan(name, { kind: kinds[kind], attributes }, ctx);
      const sc = span.spanContext();
      const t = new Trace(sc.traceId, sc.spanId, (sc.traceFlags & 1 ? '01' : '00'), parent?.parentId);
      let ended = false;
      return {
        trace: t,
        end(newName, attrs, error) {
          if (ended) return;
          ended = true;
          if (newName) span.updateName(newName);
          span.setAttributes(attrs);
          if (error) span.setStatus({ code: api.SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
  log?.info({ endpoint: otlpTracesEndpoint(), service: commonEnv().OTEL_SERVICE_NAME || service }, 'OpenTelemetry traces exported over OTLP/HTTP');
  return true;
}

/** Start a span (tracing on) continuing `traceparent`; undefined when tracing is off. */
export function startSpan(name: string, kind: 'server' | 'consumer', traceparent: string | undefined | null, attributes: Record<string, string | number> = {}): SpanHandle | undefined {
  return tracing?.start(name, kind, parseTraceparent(traceparent), attributes);
}

/** Export what is batched and stop (on shutdown). */
export async function shutdownTracing(): Promise<void> {
  const t = tracing;
  tracing = undefined;
  await t?.shutdown().catch(() => undefined);
}
