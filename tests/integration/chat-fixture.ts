import { randomBytes } from 'node:crypto';
import type { Sql } from 'postgres';
import { expect } from 'vitest';
import { rememberSecret } from '../../scripts/src/log-scan.ts';
import { testDatabaseUrl, type Stack } from '../support/local-stack.ts';
import { openChatDb } from '../../services/chat-worker/src/db.ts';

/**
 * What the chat-platform integration tests share: the chat face called as Open WebUI clients call
 * it (JSON bodies, Bearer tokens), the first sign-up (who becomes the admin), users the admin adds,
 * and the stack's chat schema, read directly for what the API cannot show (the outbox).
 */

export const pw = () => rememberSecret(randomBytes(12).toString('base64url'));
/** Random per call, so a file can add any number of users without clashes. */
export const email = (name: string) => `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${randomBytes(4).toString('hex')}@example.com`;

export const NOT_FOUND = "We could not find what you're looking for :/";
export const PROHIBITED = 'You do not have permission to access this resource. Please contact your administrator for assistance.';

export interface Account {
  id: string;
  token: string;
  name: string;
  email: string;
  password: string;
}
/** Who calls: an account, a bare token, or nobody. */
export type Caller = { token: string } | string | null | undefined;
export type Res = { status: number; body: any; headers: Headers };

export interface ClientOptions {
  /** Assert that every answer is JSON (default on: the chat face answers JSON everywhere). */
  json?: boolean;
  /** A further check on every answer's text. */
  eachAnswer?: (text: string) => void;
}

/** `base` is read per call: the edge starts in beforeAll and may be restarted. */
export function chatClient(base: () => string, opts: ClientOptions = {}) {
  async function call(path: string, who?: Caller, method = 'GET', body?: unknown, init: { headers?: Record<string, string> } = {}): Promise<Res> {
    const headers: Record<string, string> = { ...init.headers };
    const token = typeof who === 'string' ? who : who?.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    // A string body goes as it is, so tests can send malformed JSON.
    const r = await fetch(base() + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await r.text();
    if (opts.json !== false) expect(r.headers.get('content-type'), `${method} ${path} answers JSON`).toMatch(/^application\/json/);
    opts.eachAnswer?.(text);
    const res = { status: r.status, body: text ? JSON.parse(text) : null } as Res;
    // Not enumerable, so `toEqual({ status, body })` still compares exactly those two.
    Object.defineProperty(res, 'headers', { value: r.headers, enumerable: false });
    return res;
  }

  /** The first sign-up, who becomes the admin. */
  async function signup(name = 'Admin'): Promise<Account> {
    const form = { name, email: email(name), password: pw() };
    const r = await call('/api/v1/auths/signup', null, 'POST', form);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { id: r.body.id, token: r.body.token, ...form };
  }

  /** A user added by `admin`, with the token from the add answer. */
  async function addUser(admin: Caller, name: string, role = 'user'): Promise<Account> {
    const form = { name, email: email(name), password: pw(), role };
    const r = await call('/api/v1/auths/add', admin, 'POST', form);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { id: r.body.id, token: r.body.token, name, email: form.email, password: form.password };
  }

  return { call, signup, addUser };
}

/** A pool on the stack's chat schema, opened as the worker opens it. */
export const chatDb = (stack: Stack, max = 2): Sql => openChatDb(testDatabaseUrl(), `chat_${stack.ns}`, max);

/** The outbox events about `subjectId`, oldest first. */
export const eventsAbout = async (db: Sql, subjectId: string): Promise<any[]> =>
  (await db<{ event: any }[]>`select event from outbox where event -> 'subject' ->> 'id' = ${subjectId} order by seq`).map((r) => r.event);

/** The outbox events named `name` (e.g. group.created), oldest first. */
export const eventsNamed = async (db: Sql, name: string): Promise<any[]> =>
  (await db<{ event: any }[]>`select event from outbox where event ->> 'event' = ${name} order by seq`).map((r) => r.event);
