import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acceptedDigests, type Face } from '@gatehouse/contracts';
import { keyMatches } from '@gatehouse/common';
import type { AppliedState, LiveGates } from './live-gates.ts';
import { normalisePath } from './normalise-path.ts';

export type Verdict = 'allow' | 'read-only' | 'unauthorized' | 'unavailable';

export interface Rejection {
  /** `forbidden`: a read-only key on a write. */
  why: 'unauthorized' | 'unavailable' | 'forbidden';
  /** Whether the caller presented any credential (a missing key and a wrong key read differently). */
  presented: boolean;
  reason?: string;
}

export interface GateGuardOptions {
  face: Face;
  gates: LiveGates;
  /**
   * When the check runs: `onRequest` (before routing and body parsing: every path is covered,
   * unknown ones too) or `preHandler` (after the body is parsed, for a face whose rule depends on
   * the body, like the LLM proxy's native pass-through).
   */
  phase?: 'onRequest' | 'preHandler';
  /**
   * Whether the gate applies to this request. `path` is normalised; `tricky` says the raw path
   * was not (encoded dots, `..`, `//`): an exemption must never be granted to a tricky path.
   */
  gated: (req: FastifyRequest, path: string, tricky: boolean) => boolean;
  /** The credential the caller presented, per the face's header rules. */
  credential: (req: FastifyRequest) => string | undefined;
  /** The refusal in the face's own error envelope (which may name the request, as Anthropic's does). */
  refusal: (r: Rejection, req: FastifyRequest) => Refusal;
  /** Whether the request writes (a read-only key may not). Faces without read-only keys omit it. */
  writes?: (req: FastifyRequest) => boolean;
}

export interface Refusal {
  status: number;
  headers?: Record<string, string>;
  /** JSON unless a string with a `content-type` header is given (Qdrant's 401 is plain text). */
  body: unknown;
}

/** A request admitted through an enforced or open gate, kept until its response has gone. */
interface GatePass {
  credential: string | undefined;
  revoked?: Rejection;
  abort: AbortController;
  req: FastifyRequest;
  reply: FastifyReply;
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Aborts when the response closes (client gone, or answered) or a gate flip revokes the
     * request: pass it to the bus. Not Fastify's own `request.signal`, which a flip cannot abort.
     */
    gateSignal: AbortSignal;
    gatePass: GatePass | null;
  }
}

const RESPONSE_CLOSED = new DOMException('The response closed', 'AbortError');

export function verdictFor(s: AppliedState, credential: string | undefined): Verdict {
  if (s.status === 'unknown') return 'unavailable';
  if (s.state.state === 'open') return 'allow';
  const keys = acceptedDigests(s.state);
  if (keyMatches(credential, keys.full)) return 'allow';
  return keyMatches(credential, keys.readOnly) ? 'read-only' : 'unauthorized';
}

/**
 * The refusal a verdict means for a request, or undefined when it may proceed: a read-only key
 * may do anything but write. Shared by the HTTP guard below and the vector face's gRPC port.
 */
export function refusalFor(v: Verdict, writes: () => boolean): Rejection['why'] | undefined {
  if (v === 'allow') return undefined;
  if (v === 'read-only') return writes() ? 'forbidden' : undefined;
  return v;
}

/**
 * The face's gate, checked before routing (so unknown paths are gated too, like a middleware
 * covering everything). A flip re-judges every request in flight before the edge reports the
 * flip as applied: a request the new state refuses is answered with the refusal if nothing was
 * sent yet, or cut off if its stream had started. So once `scripts/gate` returns, no request is
 * answered under the old state.
 */
export function installGateGuard(app: FastifyInstance, opts: GateGuardOptions): void {
  const inflight = new Set<GatePass>();
  app.decorateRequest('gatePass', null);
  app.decorateRequest('gateSignal', null as unknown as AbortSignal);

  opts.gates.onChange((face, state) => {
    if (face !== opts.face) return;
    for (const pass of inflight) {
      const why = judge(verdictFor(state, pass.credential), pass.req);
      if (!why) continue;
      pass.revoked = { why, presented: pass.credential !== undefined, reason: state.status === 'unknown' ? state.reason : undefined };
      pass.abort.abort();
      if (pass.reply.raw.headersSent) pass.reply.raw.destroy();
    }
  });

  const judge = (v: Verdict, req: FastifyRequest): Rejection['why'] | undefined => refusalFor(v, () => opts.writes?.(req) ?? false);

  const aborts = new WeakMap<FastifyRequest, AbortController>();
  app.addHook('onRequest', async (req, reply) => {
    const abort = new AbortController();
    aborts.set(req, abort);
    req.gateSignal = abort.signal;
    // One shared reason: abort() without one builds a DOMException (and its stack) per request,
    // 2 % of the LLM edge's CPU, and every response closes.
    reply.raw.on('close', () => abort.abort(RESPONSE_CLOSED));
  });

  app.addHook(opts.phase ?? 'onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const abort = aborts.get(req)!;
    const { path, tricky } = normalisePath(req.url);
    if (!opts.gated(req, path, tricky)) return;
    const credential = opts.credential(req);
    const state = opts.gates.get(opts.face);
    const why = judge(verdictFor(state, credential), req);
    if (why) {
      const r = opts.refusal(
        { why, presented: credential !== undefined, reason: state.status === 'unknown' ? state.reason : undefined },
        req,
      );
      return reply.code(r.status).headers(r.headers ?? {}).send(r.body);
    }
    const pass: GatePass = { credential, abort, req, reply };
    req.gatePass = pass;
    inflight.add(pass);
    reply.raw.on('close', () => inflight.delete(pass));
  });

  // Last look before anything is written: a request revoked by a flip gets the refusal instead.
  app.addHook('onSend', async (req, reply, payload) => {
    const revoked = req.gatePass?.revoked;
    if (!revoked || reply.raw.headersSent) return payload;
    if (payload && typeof (payload as NodeJS.ReadableStream).pipe === 'function') {
      (payload as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    }
    const r = opts.refusal(revoked, req);
    reply.removeHeader('content-length');
    const text = typeof r.body === 'string' && r.headers?.['content-type'];
    reply.code(r.status).headers({ 'content-type': 'application/json; charset=utf-8', ...r.headers });
    return text ? (r.body as string) : JSON.stringify(r.body);
  });
}
