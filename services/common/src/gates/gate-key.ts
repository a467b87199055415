import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** SHA-256 hex of a key: the only form of a key that is ever stored or compared. */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Short, non-reversible label of a key for operators ("which key is live?"). */
export function keyFingerprint(digest: string): string {
  return `sha256:${digest.slice(0, 12)}`;
}

/**
 * Constant-time check of a presented key against the accepted digests. Both sides are SHA-256
 * digests, so lengths always match (timingSafeEqual throws on unequal lengths) and the time does
 * not depend on how much of the key was right. Every digest is compared, no early exit.
 */
export function keyMatches(presented: string | undefined, digests: readonly string[]): boolean {
  if (!presented) return false;
  const got = createHash('sha256').update(presented, 'utf8').digest();
  let ok = false;
  for (const d of digests) {
    if (timingSafeEqual(got, Buffer.from(d, 'hex'))) ok = true;
  }
  return ok;
}

/** 32 random bytes, URL-safe (43 characters): meets the gate's 32-character minimum and the LLM proxy's. */
export function generateKey(): string {
  return randomBytes(32).toString('base64url');
}
