import type { z } from 'zod';

/**
 * A bus contract: the subject, its version and the schemas of both sides. Producer and consumer
 * import the same object, so they cannot drift; bumping `version` makes old workers reject new
 * requests loudly instead of misreading them.
 */
export interface RequestContract<Req extends z.ZodType, Res extends z.ZodType> {
  kind: 'request';
  subject: string;
  version: number;
  request: Req;
  reply: Res;
  /**
   * Both bodies may hold integers beyond 2^53 (u64 point ids): they are parsed exactly, as BigInts
   * (common/src/exact-json.ts). Opt-in because the check that keeps parsing fast still costs a
   * walk over every parsed body, which subjects with no such integers need not pay.
   */
  exactIntegers?: boolean;
}

export interface StreamContract<Req extends z.ZodType, Meta extends z.ZodType, End extends z.ZodType> {
  kind: 'stream';
  subject: string;
  version: number;
  request: Req;
  /** First frame: what the edge needs before the first byte (content type…). */
  meta: Meta;
  /** Chunks are raw bytes (audio) or UTF-8 JSON per the contract's documentation. */
  end: End;
}

export type AnyContract = RequestContract<z.ZodType, z.ZodType> | StreamContract<z.ZodType, z.ZodType, z.ZodType>;

export function contractTag(c: { subject: string; version: number }): string {
  return `${c.subject}@${c.version}`;
}

export function requestContract<Req extends z.ZodType, Res extends z.ZodType>(
  subject: string,
  version: number,
  request: Req,
  reply: Res,
  opts: { exactIntegers?: boolean } = {},
): RequestContract<Req, Res> {
  return { kind: 'request', subject, version, request, reply, ...opts };
}

export function streamContract<Req extends z.ZodType, Meta extends z.ZodType, End extends z.ZodType>(
  subject: string,
  version: number,
  request: Req,
  meta: Meta,
  end: End,
): StreamContract<Req, Meta, End> {
  return { kind: 'stream', subject, version, request, meta, end };
}

/**
 * Face catalogs. Each face keeps one catalog in contracts/ (`<FACE>_CATALOG`): operation name →
 * its HTTP route(s), its bus subject (written out in full, so grep finds it), the schemas of its
 * body and reply, and what the face needs besides (vector: whether it writes; chat: who may call
 * it and the events it emits). The edge's routes, validation and gate checks and the worker's
 * handler table are derived from it, so adding an operation is one entry plus one handler.
 */
export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export interface HttpRoute {
  method: HttpMethod;
  /** Fastify route syntax (`/collections/:collection`). */
  url: string;
}
export interface CatalogEntry<Subject extends string = string> {
  subject: Subject;
  routes: readonly HttpRoute[];
  /** The JSON body's schema, where the operation takes one (validated once, at the edge). */
  body?: z.ZodType;
  /** What the worker answers. */
  reply: z.ZodType;
}
