import * as grpc from '@grpc/grpc-js';
import type { z } from 'zod';
import { packF32Frame, VECTOR_CATALOG, VECTOR_F32, vectorContracts, type RequestContract, type VectorOp, type VectorOpRequest } from '@gatehouse/contracts';
import { busRequest, BusError, continueTrace, jsonBytes, parseJson, type Bus, type Logger, type SightingRecorder, type Trace } from '@gatehouse/common';
import { refusalFor, verdictFor, type Rejection } from '../../../gates/gate-guard.ts';
import type { LiveGates } from '../../../gates/live-gates.ts';
import { QDRANT_VERSION, validateBody, vectorCredential } from '../vector-face.ts';
import type { RequestStats } from '../request-stats.ts';
import { requestBytes } from '../forward.ts';
import { qdrantService } from './qdrant-proto.ts';
import { RPC_TABLE, type RpcMapping } from './rpc-table.ts';
import { InvalidArgument, type Msg } from './to-rest.ts';

export interface VectorGrpcOptions {
  gates: LiveGates;
  /** The bus, or undefined while NATS is not connected (calls then get UNAVAILABLE). */
  bus: () => Bus | undefined;
  sightings?: SightingRecorder;
  log: Logger;
  /** Where calls are counted for `/telemetry` and `/metrics` (the REST face's instance). */
  requestStats?: RequestStats;
}

/** The longest a call waits for the worker when the client set no deadline (REST's request timeout). */
const MAX_WAIT_MS = 300_000;
/** Qdrant's `service.max_request_size_mb` default, as on the REST port. */
const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** The worker's Qdrant status → the gRPC status Qdrant answers for it. */
export function grpcStatusFor(httpStatus: number): grpc.status {
  switch (httpStatus) {
    case 400:
    case 422:
      return grpc.status.INVALID_ARGUMENT;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.NOT_FOUND;
    case 409:
      return grpc.status.ALREADY_EXISTS;
    case 413:
      return grpc.status.RESOURCE_EXHAUSTED;
    case 429:
      return grpc.status.RESOURCE_EXHAUSTED;
    case 499:
      return grpc.status.CANCELLED;
    case 501:
      return grpc.status.UNIMPLEMENTED;
    case 503:
      return grpc.status.UNAVAILABLE;
    case 504:
      return grpc.status.DEADLINE_EXCEEDED;
    default:
      return httpStatus >= 400 && httpStatus < 500 ? grpc.status.FAILED_PRECONDITION : grpc.status.INTERNAL;
  }
}

/** The gate's refusal as Qdrant's gRPC auth layer words it (the same texts as REST's 401 / 403). */
export function grpcRefusal(r: Rejection): { code: grpc.status; details: string } {
  if (r.why === 'unavailable') return { code: grpc.status.UNAVAILABLE, details: 'Service unavailable: the vector store cannot confirm its access gate (fail closed)' };
  if (r.why === 'forbidden') return { code: grpc.status.PERMISSION_DENIED, details: 'Forbidden: Write access is required' };
  return {
    code: grpc.status.UNAUTHENTICATED,
    details: r.presented ? 'Invalid API key or JWT' : 'Must provide an API key or an Authorization bearer token',
  };
}

function metadataText(md: grpc.Metadata, key: string): string | undefined {
  const v = md.get(key)[0];
  return v === undefined ? undefined : typeof v === 'string' ? v : v.toString('utf8');
}

/** `ipv4:127.0.0.1:5000`, `[::1]:5000` or `127.0.0.1:5000` → the address, as REST's `req.ip` names clients. */
export function peerAddress(peer: string): string {
  const p = peer.replace(/^ipv[46]:/, '');
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(p);
  if (bracketed) return bracketed[1]!;
  const i = p.lastIndexOf(':');
  return i > 0 && p.indexOf(':') === i ? p.slice(0, i) : p;
}

/** A call between the gate's admission and its answer: a gate flip re-judges it. */
interface OpenCall {
  credential: string | undefined;
  writes: boolean;
  finish: (err: grpc.ServiceError | null, reply?: Msg) => void;
}

type Callback = grpc.sendUnaryData<Msg>;

/**
 * Qdrant's gRPC API (port 6334) for the vector face: every RPC is translated onto the vector
 * catalog's bus operation that serves its REST counterpart (rpc-table.ts), behind the same gate
 * as REST — the `api-key` metadata or `authorization: Bearer`, the read-only key by the catalog's
 * `writes`, key sightings for the rollout preflight — and re-judged when the gate flips.
 */
export class VectorGrpcServer {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
  private readonly open = new Set<OpenCall>();

  constructor(private readonly opts: VectorGrpcOptions) {
    opts.gates.onChange((face, state) => {
      if (face !== 'vector') return;
      for (const call of this.open) {
        const why = refusalFor(verdictFor(state, call.credential), () => call.writes);
        if (why) call.finish(serviceError(grpcRefusal({ why, presented: call.credential !== undefined, reason: state.status === 'unknown' ? state.reason : undefined })));
      }
    });
    for (const service of ['qdrant.Collections', 'qdrant.Points', 'qdrant.Snapshots'] as const) {
      const def = qdrantService(service);
      const impl: grpc.UntypedServiceImplementation = {};
      for (const method of Object.keys(def)) impl[method] = (call: grpc.ServerUnaryCall<Msg, Msg>, cb: Callback) => void this.handle(`${service}/${method}`, call, cb);
      this.server.addService(def, impl);
    }
    // The health checks answer without a key, like REST's `/healthz`: probes carry no credentials.
    this.server.addService(qdrantService('qdrant.Qdrant'), {
      HealthCheck: (_call: grpc.ServerUnaryCall<Msg, Msg>, cb: Callback) => cb(null, { title: QDRANT_VERSION.title, version: QDRANT_VERSION.version, commit: QDRANT_VERSION.commit }),
    });
    this.server.addService(qdrantService('grpc.health.v1.Health'), {
      Check: (_call: grpc.ServerUnaryCall<Msg, Msg>, cb: Callback) => cb(null, { status: this.ready() ? 'SERVING' : 'NOT_SERVING' }),
    });
  }

  private ready(): boolean {
    return this.opts.bus() !== undefined && this.opts.gates.degraded().length === 0;
  }

  /** Listen on `host:port` (0: any free port); resolves to the bound port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
    });
  }

  /** Stop taking calls, let open ones finish (bounded), then cut what is left. */
  close(graceMs = 5_000): Promise<void> {
    return new Promise((resolve) => {
      const force = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  private async handle(rpc: string, call: grpc.ServerUnaryCall<Msg, Msg>, cb: Callback): Promise<void> {
    const startedAt = performance.now();
    const mapping = RPC_TABLE[rpc];
    const op = mapping?.op ?? undefined;
    const credential = vectorCredential({ 'api-key': metadataText(call.metadata, 'api-key'), authorization: metadataText(call.metadata, 'authorization') });
    this.opts.sightings?.record(peerAddress(call.getPeer()), metadataText(call.metadata, 'user-agent') ?? '', credential);

    // An RPC this store does not serve counts as a write, as an unknown REST path with a body does.
    const writes = op ? VECTOR_CATALOG[op].writes : true;
    const state = this.opts.gates.get('vector');
    const why = refusalFor(verdictFor(state, credential), () => writes);
    if (why) return cb(serviceError(grpcRefusal({ why, presented: credential !== undefined })));

    let done = false;
    const openCall: OpenCall = {
      credential,
      writes,
      finish: (err, reply) => {
        if (done) return;
        done = true;
        this.open.delete(openCall);
        const collection = (call.request as { collection_name?: unknown } | undefined)?.collection_name;
        this.opts.requestStats?.recordGrpc(rpc, err ? (err.code ?? grpc.status.UNKNOWN) : grpc.status.OK, (performance.now() - startedAt) * 1000, typeof collection === 'string' && collection ? collection : undefined);
        if (err) cb(err);
        else cb(null, { ...reply, time: (performance.now() - startedAt) / 1000 });
      },
    };
    this.open.add(openCall);
    call.on('cancelled', () => {
      done = true;
      this.open.delete(openCall);
    });
    const trace = grpcTrace(call);
    try {
      if (!mapping || !op) throw unimplemented(rpc);
      const reply = await this.forward(op, mapping, call, rpc, trace);
      openCall.finish(null, reply);
    } catch (err) {
      const e = toServiceError(err);
      if (e.code === grpc.status.INTERNAL) this.opts.log.error({ err, rpc, ...trace.logFields }, 'vector gRPC call failed');
      openCall.finish(e);
    }
  }

  private async forward(op: VectorOp, mapping: RpcMapping, call: grpc.ServerUnaryCall<Msg, Msg>, rpc: string, trace: Trace): Promise<Msg> {
    const b = this.opts.bus();
    if (!b) throw new BusError(503, 'Service unavailable: the vector store is not connected to its bus');
    const req = mapping.request(call.request);
    const entry = VECTOR_CATALOG[op] as { body?: z.ZodType };
    if (entry.body) validateBody(entry.body, req.body);
    const contract = vectorContracts[op] as RequestContract<typeof VectorOpRequest, z.ZodObject<{ result: z.ZodType }>>;
    const envelope = { ...req, query: req.query ?? {} };
    const opts = { trace, timeoutMs: waitMs(call) };
    // Vectors (protobuf floats) cross the bus as Float32 bytes, not as decimal JSON (VECTOR_F32).
    const frame = req.body === undefined ? undefined : packF32Frame({ op, ...envelope, body: undefined }, req.body, jsonBytes);
    const { result } = frame
      ? contract.reply.parse(parseJson(await requestBytes(b, VECTOR_F32, frame, opts), contract.exactIntegers))
      : await busRequest(b, contract, envelope, opts);
    try {
      return mapping.reply(result);
    } catch (err) {
      throw new Error(`cannot translate the worker's reply to ${rpc}: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** The call's trace: the client's `traceparent` metadata continued, or a new trace (tracing.ts). */
function grpcTrace(call: grpc.ServerUnaryCall<Msg, Msg>): Trace {
  const tp = call.metadata.get('traceparent')[0];
  return continueTrace(typeof tp === 'string' ? tp : undefined);
}

/** The client's deadline (grpc-timeout), capped at MAX_WAIT_MS. */
function waitMs(call: grpc.ServerUnaryCall<Msg, Msg>): number {
  const deadline = call.getDeadline();
  const at = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  if (!Number.isFinite(at)) return MAX_WAIT_MS;
  return Math.max(1, Math.min(MAX_WAIT_MS, at - Date.now()));
}

function unimplemented(rpc: string): BusError {
  return new BusError(501, `${rpc} is not implemented: it has no counterpart in this single-node store on Postgres`);
}

function serviceError(e: { code: grpc.status; details: string }): grpc.ServiceError {
  return Object.assign(new Error(e.details), { code: e.code, details: e.details, metadata: new grpc.Metadata() });
}

export function toServiceError(err: unknown): grpc.ServiceError {
  if (err instanceof BusError) {
    const e = serviceError({ code: grpcStatusFor(err.status), details: err.message });
    // Strict mode's rate limits say when to retry: Qdrant's clients read `retry-after` from the trailers.
    if (typeof err.details.retry_after === 'number') e.metadata.set('retry-after', String(err.details.retry_after));
    return e;
  }
  if (err instanceof InvalidArgument) return serviceError({ code: grpc.status.INVALID_ARGUMENT, details: err.message });
  return serviceError({ code: grpc.status.INTERNAL, details: 'Service internal error' });
}
