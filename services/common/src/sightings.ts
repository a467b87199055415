import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { keyDigest, keyFingerprint } from './gates/gate-key.ts';

/**
 * Which key each client presented last (enforcing the vector gate would otherwise lock out clients nobody knew were keyless): the edge
 * records, per client (address + user agent), the fingerprint of the key it sent — also while
 * the gate is open — so an operator can see, before enforcing, who would be locked out.
 * Only fingerprints are stored, never keys.
 */
export interface Sighting {
  client: string;
  address: string;
  userAgent: string;
  /** keyFingerprint of the presented key, or null when the client sent none. */
  fingerprint: string | null;
  at: string;
}

/** How long a sighting is kept, and so what "seen recently" means by default. */
export const SIGHTING_TTL_SECONDS = 7 * 24 * 3600;

const prefix = (ns: string, face: string) => `${ns ? `${ns}:` : ''}gh:sightings:${face}:`;

export function clientId(address: string, userAgent: string): string {
  return createHash('sha256').update(`${address}\n${userAgent}`).digest('hex').slice(0, 32);
}

export function presentedFingerprint(key: string | undefined): string | null {
  return key === undefined ? null : keyFingerprint(keyDigest(key));
}

export class SightingRecorder {
  /** Last fingerprint written per client, so a busy client costs one Redis write a minute. */
  private readonly recent = new Map<string, { fp: string | null; at: number }>();
  constructor(
    private readonly redis: Redis,
    private readonly face: string,
    private readonly ns = '',
  ) {}

  record(address: string, userAgent: string, key: string | undefined): void {
    const id = clientId(address, userAgent);
    const fp = presentedFingerprint(key);
    const last = this.recent.get(id);
    const now = Date.now();
    if (last && last.fp === fp && now - last.at < 60_000) return;
    if (this.recent.size > 10_000) this.recent.clear();
    this.recent.set(id, { fp, at: now });
    const s: Sighting = { client: id, address, userAgent, fingerprint: fp, at: new Date(now).toISOString() };
    // Never on the request's path: a Redis outage must not slow or fail requests.
    this.redis.set(prefix(this.ns, this.face) + id, JSON.stringify(s), 'EX', SIGHTING_TTL_SECONDS).catch(() => {
      this.recent.delete(id);
    });
  }
}

/** Every client seen within `sinceMs` (newest first). */
export async function listSightings(redis: Redis, face: string, sinceMs: number, ns = ''): Promise<Sighting[]> {
  const out: Sighting[] = [];
  let cursor = '0';
  for (let i = 0; i < 10_000; i++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix(ns, face)}*`, 'COUNT', 500);
    if (keys.length) {
      for (const raw of await redis.mget(keys)) {
        if (!raw) continue;
        const s = JSON.parse(raw) as Sighting;
        if (Date.now() - Date.parse(s.at) <= sinceMs) out.push(s);
      }
    }
    cursor = next;
    if (cursor === '0') break;
  }
  return out.sort((a, b) => b.at.localeCompare(a.at));
}
