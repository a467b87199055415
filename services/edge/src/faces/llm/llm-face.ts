import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { acceptedDigests, checkCountTokensBody, checkMessagesBody, isNativeModel, LLM_CATALOG } from '@gatehouse/contracts';
import { busRequest, BusError, keyDigest, keyFingerprint, keyMatches, openBusStream, type Bus } from '@gatehouse/common';
import { installGateGuard } from '../../gates/gate-guard.ts';
import { sendHealth } from '../../gates/health.ts';
import type { LiveGates } from '../../gates/live-gates.ts';
import { bearerToken, buildFace, callerOf, headerValue, holdSlot, readMeta, requireBus, responseBody, withDeadline, type FaceServerOptions, type StreamSlots } from '../../kit/index.ts';
import { anthropicError, llmRefusal, retryHeaders, toAnthropicError } from './anthropic-errors.ts';
import { catalogRouteSchema, registerApiDocs } from '../../kit/api-docs.ts';
import { LLM_DOCS, llmRouteDocs } from './llm-docs.ts';

export interface LlmFaceOptions {
  gates: LiveGates;
  bus: () => Bus | undefined;
  /** Longest silence between two frames of a reply (a non-streamed answer is one long silence). */
  streamIdleMs: number;
  /** LLM_MAX_STREAMS_PER_CLIENT: replies in progress per client (kit/stream-limits.ts); absent → no limit. */
  streamSlots?: StreamSlots;
  /** LLM_STREAM_MAX_DURATION_MS: longest total time of one reply; 0 → none. */
  streamMaxMs?: number;
}

type LlmOp = keyof typeof LLM_CATALOG;

/** The proxy key may come in x-proxy-key, x-api-key or Authorization: Bearer — the first non-empty wins. */
export function proxyCredential(h: FastifyRequest['headers']): string | undefined {
  return headerValue(h, 'x-proxy-key') ?? headerValue(h, 'x-api-key') ?? bearerToken(headerValue(h, 'authorization'));
}

/** The paths whose body names a model, the one thing that can exempt a request (native pass-through). */
const MESSAGE_PATHS = new Set<string>([...LLM_CATALOG.messages.routes, ...LLM_CATALOG.countTokens.routes].map((r) => r.url));

const invalidJson = () => Object.assign(new Error('The request body is not valid JSON.'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' });

/**
 * `{"model":"<plain string>", …` at the start of the body: the common shape, read without parsing
 * the whole body. Only trusted when it must equal what JSON.parse (the worker's) would read: no
 * other `"model"` anywhere (the last duplicate key wins in JSON.parse) and no `\u` escape anywhere
 * (a key could spell `model` with one); anything else is parsed.
 */
const MODEL_FIRST = /^[ \t\n\r]*\{[ \t\n\r]*"model"[ \t\n\r]*:[ \t\n\r]*"([^"\\]*)"[ \t\n\r]*[,}]/;

/** The body's top-level model as the worker will read it (undefined: none), or the 400 for a body that is not JSON. */
function routingModel(raw: string): string | undefined {
  const m = MODEL_FIRST.exec(raw);
  if (m && raw.indexOf('"model"', m[0].length) < 0 && raw.indexOf('\\u') < 0) return m[1];
  let body: unknown;
  try {
    body = raw.length ? JSON.parse(raw) : undefined;
  } catch {
    throw invalidJson();
  }
  const model = (body as { model?: unknown } | null)?.model;
  return typeof model === 'string' ? model : undefined;
}

/**
 * The body of a message path as sent: the edge forwards these bytes and reads only the model
 * (for the gate); the worker parses and validates them once. Other paths are parsed as JSON.
 */
const rawBodies = new WeakMap<FastifyRequest, string>();
const models = new WeakMap<FastifyRequest, string | undefined>();
const rawBody = (req: FastifyRequest): string => rawBodies.get(req) ?? '';
function modelOf(req: FastifyRequest): string | undefined {
  if (models.has(req)) return models.get(req);
  const model = routingModel(rawBody(req));
  models.set(req, model);
  return model;
}

/**
 * Headers the worker may forward to an Anthropic-speaking upstream. The caller's own credential
 * goes along as sent — unless it is the proxy key, which never leaves the proxy.
 */
function forwardHeaders(req: FastifyRequest, proxyDigests: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const h = req.headers;
  for (const name in h) {
    if (!(name.startsWith('anthropic-') || name === 'user-agent' || name === 'x-app')) continue;
    const value = h[name];
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const apiKey = h['x-api-key'];
  if (typeof apiKey === 'string' && apiKey && !keyMatches(apiKey, proxyDigests)) out['x-api-key'] = apiKey;
  const auth = h.authorization;
  if (typeof auth === 'string' && auth && !keyMatches(bearerToken(auth), proxyDigests)) out.authorization = auth;
  return out;
}

/** Anthropic's mid-stream error event (e.g. `overloaded_error`), from any failure of the stream. */
const sseError = (err: unknown): Buffer => Buffer.from(`event: error\ndata: ${JSON.stringify(toAnthropicError(err).body)}\n\n`);

/** The LLM proxy face (Anthropic Messages) as a plugin: gate after parsing, Anthropic envelope, catalog routes. */
export const llmFace: FastifyPluginAsync<LlmFaceOptions> = async (app, opts) => {
  const bus = requireBus(opts.bus, 'the LLM proxy is not connected to its bus; try again shortly');

  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (MESSAGE_PATHS.has(req.routeOptions.url ?? '')) {
      rawBodies.set(req, text);
      return done(null, undefined);
    }
    try {
      done(null, text.length ? JSON.parse(text) : undefined);
    } catch {
      done(invalidJson(), undefined);
    }
  });

  installGateGuard(app, {
    face: 'llm',
    gates: opts.gates,
    // After body parsing: whether a request is native pass-through depends on its model.
    phase: 'preHandler',
    // Only /v1/*, only non-GET, never native pass-through. A tricky path is gated.
    gated: (req, path, tricky) => {
      if (!tricky && !(path === '/v1' || path.startsWith('/v1/'))) return false;
      if (req.method === 'GET') return false;
      if (tricky || !MESSAGE_PATHS.has(path) || !rawBodies.has(req)) return true;
      const model = modelOf(req);
      return !(model !== undefined && isNativeModel(model));
    },
    credential: (req) => proxyCredential(req.headers),
    refusal: llmRefusal,
  });

  app.addHook('onSend', (req, reply, payload, done) => {
    if (!reply.hasHeader('request-id')) reply.header('request-id', req.id);
    retryHeaders(reply);
    done(null, payload);
  });
  app.setErrorHandler((err, req, reply) => {
    const e = toAnthropicError(err);
    if (e.status >= 500) req.log.error({ err }, 'llm request failed');
    return reply.code(e.status).headers(e.headers ?? {}).send({ ...e.body, request_id: req.id });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ ...anthropicError(404, `Not found: ${req.method} ${req.url}`).body, request_id: req.id }));

  await registerApiDocs(app, LLM_DOCS);
  app.get('/health', async (_req, reply) => sendHealth(reply, 'llm', opts.gates, opts.bus() !== undefined));
  // A reachability probe (Claude Code's gateway check among them) asks HEAD / and wants a 200.
  app.head('/', async (_req, reply) => reply.code(200).send());

  /**
   * While the worker is away, bodies are still judged here, so a client mistake reads as one and
   * not as "try again" (with a worker, it judges them: the edge forwards the bytes unparsed).
   */
  const judgeHere = (check: { ok: true } | { ok: false; message: string }) => {
    if (!check.ok) throw new BusError(400, check.message);
  };

  const handlers: Record<LlmOp, RouteHandlerMethod> = {
    listModels: async (req) => busRequest(bus(), LLM_CATALOG.listModels, {}, { trace: req.trace }),

    countTokens: async (req) => {
      if (!opts.bus()) judgeHere(checkCountTokensBody(rawBody(req)));
      return busRequest(bus(), LLM_CATALOG.countTokens, { raw: rawBody(req) }, { trace: req.trace });
    },

    messages: async (req, reply) => {
      if (!opts.bus()) judgeHere(checkMessagesBody(rawBody(req)));
      // Streamed or not, a reply holds a worker and an upstream request for as long: both count.
      if (!(await holdSlot(opts.streamSlots, callerOf(proxyCredential(req.headers), req.ip), reply))) {
        throw new BusError(429, `This client already has ${opts.streamSlots!.limit} requests in progress, the most allowed at once; wait for one to finish.`, { retryAfter: '1' });
      }
      const gate = opts.gates.get('llm');
      const digests = gate.status === 'ready' && gate.state.state === 'enforced' ? acceptedDigests(gate.state).full : [];
      const verified = digests.length > 0 && keyMatches(proxyCredential(req.headers), digests);
      const stream = withDeadline(
        openBusStream(
          bus(),
          LLM_CATALOG.messages,
          {
            raw: rawBody(req),
            headers: forwardHeaders(req, digests),
            proxyKeyVerified: verified,
            requestId: req.id,
            gate: gate.status !== 'ready' ? 'unknown' : gate.state.state === 'enforced' ? 'enforced' : 'open',
            ...(verified ? { client: keyFingerprint(keyDigest(proxyCredential(req.headers)!)) } : {}),
          },
          { idleTimeoutMs: opts.streamIdleMs, signal: req.gateSignal, trace: req.trace },
        ),
        opts.streamMaxMs ?? 0,
      );
      const meta = await readMeta(stream, 'LLM worker');
      // A stream that fails after its 200 ends with Anthropic's in-band error event, not a cut connection.
      const sse = /^text\/event-stream/.test(String(meta.headers['content-type'] ?? ''));
      return reply.code(meta.status).headers(meta.headers).send(responseBody(stream, sse ? sseError : undefined));
    },
  };

  for (const [op, entry] of Object.entries(LLM_CATALOG)) {
    const body = 'body' in entry ? entry.body : undefined;
    for (const route of entry.routes) app.route({ method: route.method, url: route.url, schema: catalogRouteSchema(route, op, body), config: { docs: llmRouteDocs(op as LlmOp) }, handler: handlers[op as LlmOp] });
  }
};

export function buildLlmFace(server: Pick<FaceServerOptions, 'log' | 'logRequests' | 'trustProxy'>, opts: LlmFaceOptions): Promise<FastifyInstance> {
  return buildFace(
    {
      ...server,
      face: 'llm',
      requestTimeout: 0, // long generations: the bus idle timeout bounds silence instead
      bodyLimit: 32 * 1024 * 1024, // Anthropic's Messages limit
      genReqId: () => `req_${crypto.randomUUID().replaceAll('-', '')}`,
    },
    llmFace,
    opts,
  );
}
