/**
 * Small pieces every store module uses: body parsing with Qdrant's error wording, fragment
 * joining, operation ids and UpdateResult.
 */
import type postgres from 'postgres';
import type { z } from 'zod';
import { qdrantBodyError, type QdrantUpdateResult } from '@gatehouse/contracts';
import type { CollectionMeta, Db, Fragment } from './collections/catalog.ts';
import { QdrantError } from './errors.ts';
import { parseExactJson, stringifyExactJson } from '@gatehouse/common';

/** Parse a request body with a contracts/qdrant.ts schema; an absent body counts as `{}`. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body === undefined ? {} : body);
  if (parsed.success) return parsed.data;
  const { status, message } = qdrantBodyError(parsed.error);
  throw new QdrantError(status, message);
}

/** `a, b, c` from fragments. */
export function join(db: Db, parts: readonly Fragment[], sep: 'comma' | 'and' = 'comma'): Fragment {
  const [first, ...rest] = parts;
  if (!first) return sep === 'and' ? db`true` : db``;
  return rest.reduce((acc, f) => (sep === 'and' ? db`${acc} and ${f}` : db`${acc}, ${f}`), first);
}

/** Options of every write route (`?wait=`, `?timeout=` in seconds, validated by the bus glue). */
export type WriteOptions = { wait?: boolean; timeout?: number };

/** Options of read routes (`?timeout=` in seconds: strict mode's `max_timeout` checks it). */
export type ReadOptions = { timeout?: number };

/** The next operation id of a collection (per-collection sequence, starting at 0). */
export async function nextOperationId(db: Db, schema: string, meta: CollectionMeta): Promise<number> {
  const [row] = await db<{ op: string }[]>`
    select nextval(${`${quoteIdent(schema)}.${quoteIdent(meta.sequence)}`}::regclass)::text as op`;
  return Number(row!.op);
}

/** Identifier quoting for the regclass text above (passed as a value, not as SQL text). */
function quoteIdent(s: string): string {
  return `"${s.replace(/"/g, '""')}"`;
}

/** What a write answers when `wait=true&timeout=N` ran out before it committed. */
export const WAIT_TIMEOUT: QdrantUpdateResult = { operation_id: null, status: 'wait_timeout' };

/**
 * `wait=true&timeout=N`: resolves with the write's result, or `undefined` when it is still running
 * after N seconds (Qdrant then answers `wait_timeout`). The write is not cancelled: it commits or
 * rolls back on its own, as Qdrant's queued operation is applied after the answer.
 */
export async function waitAtMost<T>(run: Promise<T>, opts: WriteOptions): Promise<T | undefined> {
  if (!opts.wait || opts.timeout === undefined) return run;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, opts.timeout! * 1000, undefined);
  });
  try {
    return await Promise.race([run, expired]);
  } finally {
    clearTimeout(timer);
    // A failure after the answer has nobody to report to; it must not crash the worker either.
    run.catch(() => undefined);
  }
}

export function updateResult(operationId: number, opts: WriteOptions): QdrantUpdateResult {
  return { operation_id: operationId, status: opts.wait ? 'completed' : 'acknowledged' };
}

/** Remove `undefined` members (JSON round trip; configs are plain JSON). */
export function plain<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export type Sql = postgres.Sql;

/**
 * postgres.js options for the store's connection: `json`/`jsonb` columns (payloads) are read with
 * the exact parser, so a payload integer beyond 2^53 comes back as the BigInt it was stored as
 * (jsonb keeps numerics exactly; JSON.parse would round it).
 */
export const EXACT_JSON_TYPES = {
  exactJson: { to: 114, from: [114, 3802], serialize: (v: unknown) => stringifyExactJson(v), parse: (s: string) => parseExactJson(s) },
};
