import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { acceptedDigests, anthropicIssueMessage, isNativeModel, LLM_CATALOG } from '@gatehouse/contracts';
import { busRequest, busStream, BusError, keyMatches, type Bus } from '@gatehouse/common';
import { installGateGuard } from '../../gates/gate-guard.ts';
import { sendHealth } from '../../gates/health.ts';
import type { LiveGates } from '../../gates/live-gates.ts';
import { bearerToken, buildFace, firstMeta, headerValue, relayChunks, requireBus, type FaceServerOptions } from '../../kit/index.ts';
import { anthropicError, llmRefusal, toAnthropicError } from './anthropic-errors.ts';

export interface LlmFaceOptions {
  gates: LiveGates;
  bus: () => Bus | undefined;
  /** Longest silence between two frames of a reply (a non-streamed answer is one long silence). */
  streamIdleMs: number;
}

type LlmOp = keyof typeof LLM_CATALOG;

/** Seed 000: the proxy key may come in x-proxy-key, x-api-key or Authorization: Bearer — the first non-empty wins. */
export function proxyCredential(h: FastifyRequest['headers']): string | undefined {
  return headerValue(h, 'x-proxy-key') ?? headerValue(h, 'x-api-key') ?? bearerToken(headerValue(h, 'authorization'));
}

/** The paths whose body names a model, the one thing that can exempt a request (native pass-through). */
const MESSAGE_PATHS = new Set<string>([...LLM_CATALOG.messages.routes, ...LLM_CATALOG.countTokens.routes].map((r) => r.url));

function modelOf(body: unknown): string | undefined {
  const m = (body as { model?: unknown } | null)?.model;
  return typeof m === 'string' ? m : undefined;
}

/** The body exactly as the client sent it: native requests are forwarded byte for byte. */
const rawBodies = new WeakMap<FastifyRequest, string>();
const rawBody = (req: FastifyRequest): string => rawBodies.get(req) ?? JSON.stringify(req.body);

/**
 * Headers the worker may forward to an Anthropic-speaking upstream. The caller's own credential
 * goes along as sent — unless it is the proxy key, which never leaves the proxy.
 */
function forwardHeaders(req: FastifyRequest, proxyDigests: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const v = Array.isArray(value) ? value.join(', ') : value;
    if (v === undefined) continue;
    if (name.startsWith('anthropic-') || name === 'user-agent' || name === 'x-app') out[name] = v;
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey && !keyMatches(apiKey, proxyDigests)) out['x-api-key'] = apiKey;
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth && !keyMatches(bearerToken(auth), proxyDigests)) out.authorization = auth;
  return out;
}

/** Anthropic's mid-stream error event (e.g. `overloaded_error`), from any failure of the stream. */
const sseError = (err: unknown): Buffer => Buffer.from(`event: error\ndata: ${JSON.stringify(toAnthropicError(err).body)}\n\n`);

/** The LLM proxy face (Anthropic Messages) as a plugin: gate after parsing, Anthropic envelope, catalog routes. */
export const llmFace: FastifyPluginAsync<LlmFaceOptions> = async (app, opts) => {
  const bus = requireBus(opts.bus, 'the LLM proxy is not connected to its bus; try again shortly');

  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    rawBodies.set(req, body as string);
    try {
      done(null, (body as string).length ? JSON.parse(body as string) : undefined);
    } catch {
      done(Object.assign(new Error('The request body is not valid JSON.'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined);
    }
  });

  installGateGuard(app, {
    face: 'llm',
    gates: opts.gates,
    // After body parsing: whether a request is native pass-through depends on its model.
    phase: 'preHandler',
    // Seed 000: only /v1/*, only non-GET, never native pass-through. A tricky path is gated.
    gated: (req, path, tricky) => {
      if (!tricky && !(path === '/v1' || path.startsWith('/v1/'))) return false;
      if (req.method === 'GET') return false;
      const model = modelOf(req.body);
      return !(!tricky && MESSAGE_PATHS.has(path) && model !== undefined && isNativeModel(model));
    },
    credential: (req) => proxyCredential(req.headers),
    refusal: llmRefusal,
  });

  app.addHook('onSend', async (req, reply, payload) => {
    if (!reply.hasHeader('request-id')) reply.header('request-id', req.id);
    return payload;
  });
  app.setErrorHandler((err, req, reply) => {
    const e = toAnthropicError(err);
    if (e.status >= 500) req.log.error({ err }, 'llm request failed');
    return reply.code(e.status).headers(e.headers ?? {}).send({ ...e.body, request_id: req.id });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ ...anthropicError(404, `Not found: ${req.method} ${req.url}`).body, request_id: req.id }));

  app.get('/health', async (_req, reply) => sendHealth(reply, 'llm', opts.gates, opts.bus() !== undefined));

  const handlers: Record<LlmOp, RouteHandlerMethod> = {
    listModels: async (req) => busRequest(bus(), LLM_CATALOG.listModels, {}, { requestId: req.id }),

    countTokens: async (req) => {
      const parsed = LLM_CATALOG.countTokens.body.safeParse(req.body);
      if (!parsed.success) throw new BusError(400, anthropicIssueMessage(parsed.error));
      return busRequest(bus(), LLM_CATALOG.countTokens, { raw: rawBody(req) }, { requestId: req.id });
    },

    messages: async (req, reply) => {
      const model = modelOf(req.body);
      if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) throw new BusError(400, 'The request body must be a JSON object.');
      if (model === undefined) throw new BusError(400, 'model: Field required');
      // Native requests go out untouched, so the first-party API judges them; ours we check here.
      if (!isNativeModel(model)) {
        const parsed = LLM_CATALOG.messages.body.safeParse(req.body);
        if (!parsed.success) throw new BusError(400, anthropicIssueMessage(parsed.error));
      }
      const gate = opts.gates.get('llm');
      const digests = gate.status === 'ready' && gate.state.state === 'enforced' ? acceptedDigests(gate.state).full : [];
      const frames = busStream(
        bus(),
        LLM_CATALOG.messages,
        {
          raw: rawBody(req),
          headers: forwardHeaders(req, digests),
          proxyKeyVerified: digests.length > 0 && keyMatches(proxyCredential(req.headers), digests),
          requestId: req.id,
        },
        { idleTimeoutMs: opts.streamIdleMs, signal: req.signal, requestId: req.id },
      );
      const meta = await firstMeta(frames, 'LLM worker');
      // A stream that fails after its 200 ends with Anthropic's in-band error event, not a cut connection.
      const sse = /^text\/event-stream/.test(String(meta.headers['content-type'] ?? ''));
      return reply.code(meta.status).headers(meta.headers).send(relayChunks(frames, sse ? sseError : undefined));
    },
  };

  for (const [op, entry] of Object.entries(LLM_CATALOG)) {
    for (const route of entry.routes) app.route({ method: route.method, url: route.url, handler: handlers[op as LlmOp] });
  }
};

export function buildLlmFace(server: Pick<FaceServerOptions, 'log' | 'logRequests'>, opts: LlmFaceOptions): Promise<FastifyInstance> {
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
