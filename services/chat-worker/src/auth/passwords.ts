import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashing for the chat platform: scrypt (memory-hard), run on libuv's thread pool so a
 * hash never blocks the event loop. Stored as `scrypt$<log2 N>$<r>$<p>$<salt b64>$<hash b64>`, so
 * the cost can be raised later without invalidating existing hashes (each hash carries its own).
 *
 * Cost: N = 2^PASSWORD_SCRYPT_LOG2N (environment, default 15), r = 8, p = 1 — 128·N·r bytes of
 * memory per hash (32 MiB at the default) and about 50–100 ms of one core. Lower it only for tests
 * or tiny machines; 14 is the least OWASP still calls acceptable. Hashes made with other
 * parameters keep verifying, and `needsRehash` says when one should be replaced at sign-in.
 */

export interface ScryptParams {
  log2N: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT: ScryptParams = { log2N: 15, r: 8, p: 1 };
/** Bounds accepted from stored hashes and the environment (so a corrupted row cannot ask for 2^40). */
const MIN_LOG2N = 10;
const MAX_LOG2N = 20;
const SALT_BYTES = 16;
const KEY_BYTES = 32;

/** PASSWORD_SCRYPT_LOG2N (10..20) over the defaults; main.ts reads the variable with its schema. */
export function scryptParamsFromEnv(env: { PASSWORD_SCRYPT_LOG2N?: string | undefined }): ScryptParams {
  const raw = env.PASSWORD_SCRYPT_LOG2N;
  if (raw === undefined || raw.trim() === '') return { ...DEFAULT_SCRYPT };
  const n = Number(raw);
  if (!Number.isInteger(n) || n < MIN_LOG2N || n > MAX_LOG2N) {
    throw new Error(`PASSWORD_SCRYPT_LOG2N must be an integer from ${MIN_LOG2N} to ${MAX_LOG2N} (got "${raw}")`);
  }
  return { ...DEFAULT_SCRYPT, log2N: n };
}

function derive(password: string, salt: Buffer, params: ScryptParams, keyLen: number): Promise<Buffer> {
  const N = 2 ** params.log2N;
  const opts: ScryptOptions = { N, r: params.r, p: params.p, maxmem: 256 * N * params.r * params.p };
  return new Promise((resolve, reject) => {
    scryptCb(password.normalize('NFKC'), salt, keyLen, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

let current: ScryptParams = { ...DEFAULT_SCRYPT };

/**
 * The parameters new hashes use from now on: main.ts sets them once at start-up, before it serves,
 * so a bad PASSWORD_SCRYPT_LOG2N stops the worker instead of every sign-up.
 */
export function useScryptParams(params: ScryptParams): void {
  current = { ...params };
}

export async function hashPassword(password: string, params: ScryptParams = current): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, params, KEY_BYTES);
  return `scrypt$${params.log2N}$${params.r}$${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

interface Parsed {
  params: ScryptParams;
  salt: Buffer;
  key: Buffer;
}

function parse(stored: string): Parsed | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [log2N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![log2N, r, p].every(Number.isInteger)) return undefined;
  if (log2N < MIN_LOG2N || log2N > MAX_LOG2N || r < 1 || r > 32 || p < 1 || p > 16) return undefined;
  const salt = Buffer.from(parts[4]!, 'base64');
  const key = Buffer.from(parts[5]!, 'base64');
  if (salt.length < 8 || key.length < 16 || key.length > 64) return undefined;
  return { params: { log2N, r, p }, salt, key };
}

/** Whether `password` matches `stored`; a malformed stored value never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const h = parse(stored);
  if (!h) return false;
  const key = await derive(password, h.salt, h.params, h.key.length);
  return timingSafeEqual(key, h.key);
}

/** A hash made with other parameters than the current ones (replace it after a successful sign-in). */
export function needsRehash(stored: string, params: ScryptParams = current): boolean {
  const h = parse(stored);
  return !h || h.params.log2N !== params.log2N || h.params.r !== params.r || h.params.p !== params.p || h.key.length !== KEY_BYTES;
}

let placeholder: Promise<string> | undefined;
let placeholderFor = '';

/**
 * The sign-in path for an email with no account: the same scrypt work against a throwaway hash
 * of the current parameters, always false — so the answer time does not tell whether the
 * account exists (Open WebUI does the same with its PLACEHOLDER_HASH).
 */
export async function verifyAgainstPlaceholder(password: string, params: ScryptParams = current): Promise<false> {
  const key = `${params.log2N}/${params.r}/${params.p}`;
  if (!placeholder || placeholderFor !== key) {
    placeholderFor = key;
    placeholder = hashPassword(randomBytes(24).toString('base64'), params);
  }
  await verifyPassword(password, await placeholder);
  return false;
}
