import type { Face, GateState } from '@gatehouse/contracts';
import type { GateStore } from './gate-store.ts';
import { keyDigest } from './gate-key.ts';

export type ReconcileOutcome = 'kept' | 'enforced' | 'opened';

/**
 * The environment's rules, kept across restarts without undoing runtime flips:
 * - the face's key variable differs from the value the edges last started with → the variable
 *   wins: enforced with that key, or open when it was cleared;
 * - the variable is unchanged (a plain restart) → the stored state stays, including a flip made
 *   with `scripts/gate` since;
 * - nothing stored yet → the variable decides (empty means open, the default).
 * Only digests are compared and stored.
 */
export async function reconcileEnvKey(
  store: GateStore,
  face: Face,
  envValue: string | undefined | { key?: string; readOnlyKey?: string },
  by: string,
): Promise<ReconcileOutcome> {
  const { key, readOnlyKey } = typeof envValue === 'object' ? envValue : { key: envValue, readOnlyKey: undefined };
  // One digest for "the variables as they were": the key alone when there is no read-only key,
  // so a face without one keeps the observation it always had.
  const digest = readOnlyKey ? keyDigest(`${key ?? ''}\u0000read-only:${readOnlyKey}`) : key ? keyDigest(key) : '';
  const [prevEnv, current] = await Promise.all([store.getEnv(face), store.get(face)]);
  const envChanged = (prevEnv?.digest ?? '') !== digest;
  const now = new Date().toISOString();
  if (!envChanged && current?.state) {
    if (!prevEnv) await store.putEnv(face, { v: 1, digest, at: now });
    return 'kept';
  }
  const state: GateState = digest
    ? {
        v: 1,
        state: 'enforced',
        keyDigests: key ? [keyDigest(key)] : [],
        ...(readOnlyKey ? { readOnlyKeyDigests: [keyDigest(readOnlyKey)] } : {}),
        changedAt: now,
        changedBy: by,
      }
    : { v: 1, state: 'open', changedAt: now, changedBy: by };
  await store.put(face, state);
  await store.putEnv(face, { v: 1, digest, at: now });
  return digest ? 'enforced' : 'opened';
}
