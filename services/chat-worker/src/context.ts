import type { Sql, TransactionSql } from 'postgres';
import type { z } from 'zod';
import { OWUI_ERRORS, validationDetail, type ChatOp, type ChatOpReply, type ChatReplyOf, type ChatRequestOf } from '@gatehouse/contracts';
import { BusError, type Bus, type Logger, type TraceCarrier } from '@gatehouse/common';
import type { ChatSettings, Saved } from './config/settings.ts';
import type { Emit } from './events/outbox.ts';
import type { IngestQueue } from './knowledge/ingest-queue.ts';
import type { UploadStore } from './knowledge/uploads.ts';

/** A row of "user" without the password hash (it never leaves the accounts module). */
export type UserRow = {
  id: string;
  email: string;
  name: string;
  role: 'admin' | 'user' | 'pending';
  profile_image_url: string;
  bio: string | null;
  gender: string | null;
  date_of_birth: string | null;
  info: Record<string, unknown> | null;
  settings: Record<string, unknown> | null;
  last_active_at: number;
  created_at: number;
  updated_at: number;
};

/** Columns of UserRow, for `select ${sql(USER_COLUMNS)}`. */
export const USER_COLUMNS = [
  'id', 'email', 'name', 'role', 'profile_image_url', 'bio', 'gender', 'date_of_birth', 'info', 'settings',
  'last_active_at', 'created_at', 'updated_at',
] as const;

export type Tx = TransactionSql;

export interface OpContext {
  /** Pool whose search_path is the chat schema (then public, for pgvector's types). */
  sql: Sql;
  /** The pool knowledge searches run on (db.ts openSearchDb: generic plans). */
  searchSql: Sql;
  /** The caller, loaded fresh from the database; null only for `none` operations. */
  user: UserRow | null;
  /** Settings as stored now (admin changes apply to the next request, on every replica). */
  settings(): Promise<ChatSettings>;
  /**
   * Write a catalog event to the outbox inside `tx`: it is published iff the transaction commits.
   * Only the events the operation's catalog entry lists are accepted.
   */
  emit: Emit;
  /** The worker's logger with the request's `trace_id` and `span_id` (common/src/bus/worker.ts). */
  log: Logger;
  /** The request's trace, for the bus calls the operation makes onwards (`{ trace: ctx.trace }`). */
  trace?: TraceCarrier;
  /** Queue files for extraction, chunking and embedding (knowledge/ingest-queue.ts). */
  ingest: IngestQueue;
  /** What this operation saved that is announced after it commits (config/settings.ts saveSettings → trackSettingsWrites). */
  saved: Saved;
  /** Where bytes live: uploads (content-addressed), and the bus whose object store carries bytes to and from the edge (knowledge/object-reply.ts). */
  blobs: FileBlobs;
}

export interface FileBlobs {
  uploads: UploadStore;
  bus: Bus;
  /** RAG_FILE_MAX_SIZE in bytes (null: no limit) and as Open WebUI words it in the 413 (`100 MB`). */
  maxFileBytes: number | null;
  maxFileLabel: string;
}

/** An operation's request as its handler gets it: the body already parsed by its catalog entry's form. */
export type OpRequest<Op extends ChatOp> = ChatRequestOf<Op>;
/** What an operation's handler answers: the body its catalog entry's `reply` promises. */
export type OpReply<Op extends ChatOp> = ChatReplyOf<Op>;
export type OpHandler<Op extends ChatOp> = (req: OpRequest<Op>, ctx: OpContext) => Promise<OpReply<Op>>;
/** The worker's handler table: one per operation of the catalog, each typed by its entry. */
export type ChatHandlers = { [Op in ChatOp]: OpHandler<Op> };

/** A module's share of the handler table, each handler typed by its operation (main.ts checks the shares cover the catalog). */
export function opTable<K extends ChatOp>(table: { [Op in K]: OpHandler<Op> }): { [Op in K]: OpHandler<Op> } {
  return table;
}

/** The caller of an operation whose auth is not `none` (the dispatcher guarantees it). */
export function me(ctx: OpContext): UserRow {
  if (!ctx.user) throw new BusError(401, OWUI_ERRORS.notAuthenticated);
  return ctx.user;
}

/** Throw an Open WebUI error: the edge answers `status` with `{"detail": detail}`. */
export function fail(status: number, detail: string): never {
  throw new BusError(status, detail);
}

/**
 * The body as the operation's form reads it (defaults applied), checked once, here, before the
 * handler runs: FastAPI's 422 list on a mismatch. No body at all (`undefined`) is FastAPI's
 * `missing` unless the form admits none; an absent or null body the form admits is read as `{}`.
 */
export function checkedBody<S extends z.ZodType>(form: S, body: unknown): z.output<S> {
  const given = form.safeParse(body);
  if (!given.success) {
    throw new BusError(422, 'validation failed', {
      detail: body === undefined ? [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] : validationDetail(given.error, body),
    });
  }
  if (body !== undefined && body !== null) return given.data;
  const r = form.safeParse({});
  if (!r.success) throw new BusError(422, 'validation failed', { detail: validationDetail(r.error, body) });
  return r.data;
}

export const now = (): number => Math.floor(Date.now() / 1000);
export const ok = <T>(body: T, status?: number): Omit<ChatOpReply, 'body'> & { body: T } => (status ? { status, body } : { body });
