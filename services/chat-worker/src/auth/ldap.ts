import { readFile } from 'node:fs/promises';
import type { ConnectionOptions } from 'node:tls';
import { Client, FilterParser, InvalidCredentialsError, escapeFilter, type Entry } from 'ldapts';
import type { ChatSettings } from '../config/settings.ts';

/**
 * Talking to the LDAP server (ldapts): Open WebUI 0.10.2's ldap_auth flow — bind with the
 * application DN, search the user by `(&(<username attr>=<user, escaped>)<search filters>)`, bind
 * as the entry found with the given password — and the admin page's connection test. Every
 * client is unbound in `finally` (a client whose bind failed keeps its socket open otherwise).
 * Failures come back as LdapError with a kind the handler maps to an HTTP answer; the server's
 * own messages are logged by the caller, never shown to the user.
 */

export type LdapServer = Pick<
  ChatSettings,
  | 'LDAP_SERVER_HOST'
  | 'LDAP_SERVER_PORT'
  | 'LDAP_ATTRIBUTE_FOR_MAIL'
  | 'LDAP_ATTRIBUTE_FOR_USERNAME'
  | 'LDAP_APP_DN'
  | 'LDAP_APP_PASSWORD'
  | 'LDAP_SEARCH_BASE'
  | 'LDAP_SEARCH_FILTERS'
  | 'LDAP_USE_TLS'
  | 'LDAP_USE_STARTTLS'
  | 'LDAP_CA_CERT_FILE'
  | 'LDAP_VALIDATE_CERT'
  | 'LDAP_CIPHERS'
>;

/**
 * - `unavailable`: no connection (refused, timed out, TLS failed) → 503, local accounts unaffected;
 * - `app_bind`: the application DN was refused → 503 (a configuration fault, not the user's);
 * - `not_found` / `ambiguous` / `bad_password`: the same 400 as a wrong local password;
 * - `config`: settings that cannot work (bad filter, unreadable CA file) → 400 naming it.
 */
export type LdapErrorKind = 'unavailable' | 'app_bind' | 'not_found' | 'ambiguous' | 'bad_password' | 'config';
export class LdapError extends Error {
  constructor(
    readonly kind: LdapErrorKind,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** Connect within 5 s, any operation within 10 s: a sign-in never hangs on a dead server. */
const CONNECT_TIMEOUT_MS = 5_000;
const OP_TIMEOUT_MS = 10_000;

export function ldapUrl(s: Pick<LdapServer, 'LDAP_SERVER_HOST' | 'LDAP_SERVER_PORT' | 'LDAP_USE_TLS'>): string {
  const host = s.LDAP_SERVER_HOST.includes(':') && !s.LDAP_SERVER_HOST.startsWith('[') ? `[${s.LDAP_SERVER_HOST}]` : s.LDAP_SERVER_HOST;
  const port = s.LDAP_SERVER_PORT ?? (s.LDAP_USE_TLS ? 636 : 389);
  return `${s.LDAP_USE_TLS ? 'ldaps' : 'ldap'}://${host}:${port}`;
}

/** An attribute description (RFC 4512: a name or an OID), so it cannot carry filter syntax. */
export const validAttribute = (a: string): boolean => /^([A-Za-z][A-Za-z0-9-]*|\d+(\.\d+)+)$/.test(a);

/**
 * The search filter for a user name, as Open WebUI builds it: the name lower-cased and escaped
 * (RFC 4515: `*`, `(`, `)`, `\` and NUL become `\2a`, `\28`, `\29`, `\5c`, `\00`), so a name can
 * only ever be a value; then the admin's extra filters.
 */
export function userFilter(s: Pick<LdapServer, 'LDAP_ATTRIBUTE_FOR_USERNAME' | 'LDAP_SEARCH_FILTERS'>, user: string): string {
  return `(&(${s.LDAP_ATTRIBUTE_FOR_USERNAME}=${escapeFilter`${user.toLowerCase()}`})${normalizeFilters(s.LDAP_SEARCH_FILTERS)})`;
}

/** Open WebUI concatenates the admin's filters as they are; a bare `a=b` is wrapped so it parses. */
function normalizeFilters(f: string): string {
  const t = f.trim();
  return t && !t.startsWith('(') ? `(${t})` : t;
}

/** Settings that cannot produce a valid filter: checked when saved, so sign-in never meets them. */
export function configProblem(s: Pick<LdapServer, 'LDAP_ATTRIBUTE_FOR_USERNAME' | 'LDAP_ATTRIBUTE_FOR_MAIL' | 'LDAP_SEARCH_FILTERS'>, groupsAttr?: string): string | undefined {
  if (!validAttribute(s.LDAP_ATTRIBUTE_FOR_USERNAME)) return `Invalid attribute_for_username "${s.LDAP_ATTRIBUTE_FOR_USERNAME}"`;
  if (!validAttribute(s.LDAP_ATTRIBUTE_FOR_MAIL)) return `Invalid attribute_for_mail "${s.LDAP_ATTRIBUTE_FOR_MAIL}"`;
  if (groupsAttr !== undefined && !validAttribute(groupsAttr)) return `Invalid attribute for groups "${groupsAttr}"`;
  const extra = normalizeFilters(s.LDAP_SEARCH_FILTERS);
  const bad = `Invalid search_filters "${s.LDAP_SEARCH_FILTERS}": not an LDAP filter (RFC 4515)`;
  // Open WebUI puts them inside the user filter's `(&…)`: they must be complete filters of their
  // own (balanced, since a literal parenthesis in a value is written \28 / \29), or they could
  // close the user clause and change what it means.
  let depth = 0;
  for (const c of extra) {
    depth += c === '(' ? 1 : c === ')' ? -1 : 0;
    if (depth < 0) return bad;
  }
  if (depth !== 0) return bad;
  try {
    if (extra) FilterParser.parseString(`(&${extra})`);
    FilterParser.parseString(userFilter(s, 'x'));
  } catch {
    return bad;
  }
  return undefined;
}

async function tlsOptions(s: LdapServer): Promise<ConnectionOptions> {
  const opts: ConnectionOptions = { rejectUnauthorized: s.LDAP_VALIDATE_CERT, servername: isIp(s.LDAP_SERVER_HOST) ? undefined : s.LDAP_SERVER_HOST };
  if (s.LDAP_CA_CERT_FILE) {
    try {
      opts.ca = [await readFile(s.LDAP_CA_CERT_FILE)];
    } catch (err) {
      throw new LdapError('config', `The CA certificate file ${s.LDAP_CA_CERT_FILE} cannot be read`, err);
    }
  }
  // "ALL" is Open WebUI's default and means "no restriction": keep Node's secure default list.
  if (s.LDAP_CIPHERS && s.LDAP_CIPHERS !== 'ALL') opts.ciphers = s.LDAP_CIPHERS;
  return opts;
}

const isIp = (h: string) => /^[\d.]+$/.test(h) || h.includes(':');

/** ldapts result errors carry an LDAP result code; everything else is the connection. */
const isResultCode = (err: unknown): boolean => typeof (err as { code?: unknown })?.code === 'number';

/** A connected (and, with StartTLS, upgraded) client; the caller unbinds it in finally. */
async function open(s: LdapServer): Promise<Client> {
  const tls = s.LDAP_USE_TLS || s.LDAP_USE_STARTTLS ? await tlsOptions(s) : undefined;
  const client = new Client({ url: ldapUrl(s), connectTimeout: CONNECT_TIMEOUT_MS, timeout: OP_TIMEOUT_MS, strictDN: false, ...(s.LDAP_USE_TLS ? { tlsOptions: tls } : {}) });
  if (s.LDAP_USE_STARTTLS && !s.LDAP_USE_TLS) {
    try {
      await client.startTLS(tls);
    } catch (err) {
      await client.unbind().catch(() => undefined);
      throw new LdapError('unavailable', `StartTLS failed: ${message(err)}`, err);
    }
  }
  return client;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Bind as the application DN (anonymous when none is set, as Open WebUI). */
async function appBind(client: Client, s: LdapServer): Promise<void> {
  if (!s.LDAP_APP_DN) return;
  try {
    await client.bind(s.LDAP_APP_DN, s.LDAP_APP_PASSWORD);
  } catch (err) {
    if (isResultCode(err)) throw new LdapError('app_bind', `application bind refused: ${message(err)}`, err);
    throw new LdapError('unavailable', `cannot reach the LDAP server: ${message(err)}`, err);
  }
}

function values(entry: Entry, attr: string): string[] {
  // Attribute names come back as the server spells them; match case-insensitively.
  const key = Object.keys(entry).find((k) => k.toLowerCase() === attr.toLowerCase());
  const v = key === undefined ? undefined : entry[key];
  if (v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  return list.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
}

/** The CN of each group DN (Open WebUI: the first `CN=` component, case-insensitive). */
export function groupNames(dns: readonly string[]): string[] {
  const out: string[] = [];
  for (const dn of dns) {
    const cn = dn
      .split(',')
      .map((p) => p.trim())
      .find((p) => p.toUpperCase().startsWith('CN='));
    if (cn && cn.length > 3) out.push(cn.slice(3));
  }
  return out;
}

export interface LdapIdentity {
  dn: string;
  email: string;
  /** The entry's cn (Open WebUI names the new account with it). */
  name: string;
  /** Group names from the groups attribute; null when group management is off. */
  groups: string[] | null;
}

/**
 * Open WebUI's ldap_auth against the server: app bind, search, user bind. An empty password is
 * refused before anything is sent (an LDAP simple bind with no password is an anonymous bind,
 * which servers accept).
 */
export async function ldapAuthenticate(s: LdapServer, groups: { attribute: string } | null, user: string, password: string): Promise<LdapIdentity> {
  if (!user.trim() || !password) throw new LdapError('bad_password', 'empty user or password');
  const client = await open(s);
  let entry: Entry;
  try {
    await appBind(client, s);
    const attributes = [s.LDAP_ATTRIBUTE_FOR_USERNAME, s.LDAP_ATTRIBUTE_FOR_MAIL, 'cn', ...(groups ? [groups.attribute] : [])];
    let found: Entry[];
    try {
      ({ searchEntries: found } = await client.search(s.LDAP_SEARCH_BASE, { scope: 'sub', filter: userFilter(s, user), attributes, sizeLimit: 2 }));
    } catch (err) {
      if (isResultCode(err)) {
        const code = (err as { code: number }).code;
        // 4 sizeLimitExceeded: more than one entry; 32 noSuchObject: the base does not exist.
        if (code === 4) throw new LdapError('ambiguous', 'more than one entry matches', err);
        if (code === 32) throw new LdapError('config', `search base ${s.LDAP_SEARCH_BASE} does not exist`, err);
        throw new LdapError('not_found', `search refused: ${message(err)}`, err);
      }
      throw new LdapError('unavailable', `search failed: ${message(err)}`, err);
    }
    if (found.length === 0) throw new LdapError('not_found', 'no entry matches');
    if (found.length > 1) throw new LdapError('ambiguous', 'more than one entry matches');
    entry = found[0]!;
    // Open WebUI: the name given must be one of the entry's user names (case-insensitively).
    if (!values(entry, s.LDAP_ATTRIBUTE_FOR_USERNAME).some((n) => n.toLowerCase() === user.toLowerCase())) {
      throw new LdapError('not_found', 'user record mismatch');
    }
  } finally {
    await client.unbind().catch(() => undefined);
  }

  // The user's own bind, on a connection of its own (as Open WebUI's connection_user).
  const userClient = await open(s);
  try {
    await userClient.bind(entry.dn, password);
  } catch (err) {
    if (err instanceof InvalidCredentialsError || isResultCode(err)) throw new LdapError('bad_password', `user bind refused: ${message(err)}`, err);
    throw new LdapError('unavailable', `cannot reach the LDAP server: ${message(err)}`, err);
  } finally {
    await userClient.unbind().catch(() => undefined);
  }

  const email = values(entry, s.LDAP_ATTRIBUTE_FOR_MAIL)[0]?.trim().toLowerCase() ?? '';
  const name = values(entry, 'cn')[0] ?? user;
  return { dn: entry.dn, email, name, groups: groups ? groupNames(values(entry, groups.attribute)) : null };
}

export interface LdapTestResult {
  ok: boolean;
  stage: 'connect' | 'bind' | 'search' | 'done';
  message: string;
  url: string;
  elapsed_ms: number;
  entries: number | null;
}

/** The admin page's test: connect, bind as the application DN, count what the search base and filters match. */
export async function ldapTest(s: LdapServer): Promise<LdapTestResult> {
  const t0 = performance.now();
  const url = ldapUrl(s);
  const done = (ok: boolean, stage: LdapTestResult['stage'], msg: string, entries: number | null = null): LdapTestResult => ({
    ok,
    stage,
    message: msg,
    url,
    elapsed_ms: Math.round((performance.now() - t0) * 10) / 10,
    entries,
  });
  let client: Client;
  try {
    client = await open(s);
  } catch (err) {
    return done(false, 'connect', message(err));
  }
  try {
    try {
      // ldapts connects lazily: the bind is the first thing that touches the network.
      await appBind(client, s);
      if (!s.LDAP_APP_DN) await client.search('', { scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] });
    } catch (err) {
      if (err instanceof LdapError && err.kind === 'app_bind') return done(false, 'bind', `The server refused the application DN: ${message(err.cause)}`);
      if (isResultCode(err)) return done(false, 'bind', message(err));
      return done(false, 'connect', err instanceof LdapError ? message(err.cause) : message(err));
    }
    try {
      const filter = `(&(${s.LDAP_ATTRIBUTE_FOR_USERNAME}=*)${normalizeFilters(s.LDAP_SEARCH_FILTERS)})`;
      const { searchEntries } = await client.search(s.LDAP_SEARCH_BASE, { scope: 'sub', filter, attributes: ['1.1'], sizeLimit: 1000 });
      return done(true, 'done', `Bound as ${s.LDAP_APP_DN || 'anonymous'}; ${searchEntries.length} entries match the search base and filters.`, searchEntries.length);
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 4) return done(true, 'done', `Bound as ${s.LDAP_APP_DN || 'anonymous'}; more than 1000 entries match the search base and filters.`, 1000);
      return done(false, 'search', `Bound, but the search failed: ${message(err)}`);
    }
  } finally {
    await client.unbind().catch(() => undefined);
  }
}
