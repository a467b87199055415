import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { continueTrace, initTracing, startSpan, type Logger, type SpanHandle, type Trace } from '@gatehouse/common';

const TRACE = Symbol('gatehouse.trace');
const SPAN = Symbol('gatehouse.span');
type Raw = IncomingMessage & { [TRACE]?: Trace; [SPAN]?: SpanHandle };

/**
 * The edge's part of "one request id end to end" (docs/observability.md): each request continues
 * the client's W3C `traceparent` (an invalid one is ignored: a new trace) or starts a trace, before
 * Fastify makes the request's logger, so every line it logs carries `trace_id` and `span_id` next to
 * its `reqId`. The answer says which trace it was in `traceresponse` (W3C Trace Context level 2);
 * bus calls send `{ trace: req.trace }`. With an OTLP endpoint configured the request is also an
 * OpenTelemetry span (face, route, status), ended when the response is (or the client went away).
 */
export async function edgeTracing(face: string, genId: () => string, log: Logger) {
  const spans = await initTracing('edge', log);
  return {
    genReqId(raw: Raw): string {
      const tp = raw.headers.traceparent;
      const incoming = typeof tp === 'string' ? tp : undefined;
      const span = spans ? startSpan(raw.method ?? 'HTTP', 'server', incoming, { 'gatehouse.face': face, 'http.request.method': raw.method ?? '' }) : undefined;
      if (span) raw[SPAN] = span;
      raw[TRACE] = span?.trace ?? continueTrace(incoming);
      return genId();
    },
    childLogger(logger: FastifyBaseLogger, bindings: Record<string, unknown>, opts: object, raw: Raw): FastifyBaseLogger {
      const t = raw[TRACE];
      if (t) {
        bindings.trace_id = t.traceId;
        bindings.span_id = t.spanId;
      }
      return logger.child(bindings, opts);
    },
    onRequest(req: FastifyRequest, reply: FastifyReply): void {
      const raw = req.raw as Raw;
      const t = (raw[TRACE] ??= continueTrace(typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined));
      req.trace = t;
      reply.header('traceresponse', t.traceparent);
      const span = raw[SPAN];
      // The span ends when the response does: its last byte sent (a stream's too), or the client
      // gone first (499, nginx's "client closed request"). Only with tracing on.
      if (span) {
        reply.raw.once('close', () => {
          const route = req.routeOptions.url ?? '(unmatched)';
          const status = reply.raw.writableFinished ? reply.statusCode : 499;
          span.end(`${req.method} ${route}`, { 'http.route': route, 'http.response.status_code': status }, status >= 500);
        });
      }
    },
  };
}
