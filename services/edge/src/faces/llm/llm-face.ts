import { Readable } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { acceptedDigests, AnthropicCountTokensRequest, AnthropicMessagesRequest, anthropicIssueMessage, isNativeModel, llmContracts } from '@gatehouse/contracts';
import { busRequest, busStream, BusError, keyMatches, type Bus, type Logger } from '@gatehouse/common';
import { installGateGuard } from '../../gates/gate-guard.ts';
import { sendHealth } from '../../gates/health.ts';
import type { LiveGates } from '../../gates/live-gates.ts';
import { bearerToken } from '../speech/speech-face.ts';
import { anthropicError, llmRefusal, toAnthropicError } from './anthropic-errors.ts';

export interface LlmFaceOptions {
  gates: LiveGates;
  log: Logger;
  bus: () => Bus | undefined;
  /** Longest silence between two frames of a reply (a non-streamed answer is one long silence). */
  streamIdleMs: number;
}

/** Seed 000: the proxy key may come in x-proxy-key, x-api-key or Authorization: Bearer — the first non-empty wins. */
export function proxyCredential(h: FastifyRequest['headers']): string | undefined {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;
  return one(h['x-proxy-key']) ?? one(h['x-api-key']) ?? bearerToken(one(h.authorization));
}

const MESSAGE_PATHS = new Set(['/v1/messages', '/v1/messages/count_tokens']);

function modelOf(body: unknown): string | undefined {
  const m = (body as { model?: unknown } | null)?.model;
  return typeof m === 'string' ? m : undefined;
}

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

function busOr503(opts: LlmFaceOptions): Bus {
  const bus = opts.bus();
  if (!bus) throw new BusError(503, 'the LLM proxy is not connected to its bus; try again shortly');
  return bus;
}

export async function buildLlmFace(opts: LlmFaceOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log.child({ face: 'llm' }) as FastifyBaseLogger,
    requestTimeout: 0, // long generations: the bus idle timeout bounds silence instead
    keepAliveTimeout: 72_000,
    bodyLimit: 32 * 1024 * 1024, // Anthropic's Messages limit
    disableRequestLogging: process.env.LOG_REQUESTS !== 'true',
    genReqId: () => `req_${crypto.randomUUID().replaceAll('-', '')}`,
  });

  // Keep the exact body text: native requests are forwarded byte for byte.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    (req as FastifyRequest & { rawBody?: string }).rawBody = body as string;
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
  app.setNotFoundHandler((req, reply) => {
    const e = anthropicError(404, `Not found: ${req.method} ${req.url}`);
    return reply.code(404).send({ ...e.body, request_id: req.id });
  });

  app.get('/health', async (_req, reply) => sendHealth(reply, 'llm', opts.gates, opts.bus() !== undefined));

  app.get('/v1/models', async (req) => busRequest(busOr503(opts), llmContracts.listModels, {}, { requestId: req.id }));

  app.post('/v1/messages/count_tokens', async (req) => {
    const parsed = AnthropicCountTokensRequest.safeParse(req.body);
    if (!parsed.success) throw new BusError(400, anthropicIssueMessage(parsed.error));
    const raw = (req as FastifyRequest & { rawBody?: string }).rawBody ?? JSON.stringify(req.body);
    return busRequest(busOr503(opts), llmContracts.countTokens, { raw }, { requestId: req.id });
  });

  app.post('/v1/messages', async (req, reply) => {
    const model = modelOf(req.body);
    if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) throw new BusError(400, 'The request body must be a JSON object.');
    if (model === undefined) throw new BusError(400, 'model: Field required');
    // Native requests go out untouched, so the first-party API judges them; ours we check here.
    if (!isNativeModel(model)) {
      const parsed = AnthropicMessagesRequest.safeParse(req.body);
      if (!parsed.success) throw new BusError(400, anthropicIssueMessage(parsed.error));
    }
    const gate = opts.gates.get('llm');
    const digests = gate.status === 'ready' && gate.state.state === 'enforced' ? acceptedDigests(gate.state).full : [];
    const frames = busStream(
      busOr503(opts),
      llmContracts.messages,
      {
        raw: (req as FastifyRequest & { rawBody?: string }).rawBody ?? JSON.stringify(req.body),
        headers: forwardHeaders(req, digests),
        proxyKeyVerified: digests.length > 0 && keyMatches(proxyCredential(req.headers), digests),
        requestId: req.id,
      },
      { idleTimeoutMs: opts.streamIdleMs, signal: req.signal, requestId: req.id },
    );
    const first = await frames.next();
    if (first.done || first.value.kind !== 'meta') {
      await frames.return(undefined);
      throw new BusError(502, 'the LLM worker answered without a status');
    }
    reply.code(first.value.meta.status).headers(first.value.meta.headers);
    return reply.send(Readable.from(bodyChunks(frames)));
  });

  return app;
}

async function* bodyChunks(frames: AsyncGenerator<{ kind: string; data?: Uint8Array }>): AsyncGenerator<Buffer> {
  for await (const f of frames) if (f.kind === 'chunk' && f.data) yield Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
}
