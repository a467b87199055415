import type { Logger } from '../logger.ts';
import { configDigest, type ConfigRecord, type ConfigStore } from './config-store.ts';

/**
 * Announce a group whose source of truth is elsewhere (Postgres): load it, and put it on the bus
 * unless the bus already says exactly that. Call it after the writing transaction committed.
 *
 * Two writers can race (A commits, B commits, B announces, A announces the older value it loaded
 * first): so after each put the source is loaded again, and announced again if it moved. The last
 * put is then always followed by a load that saw every earlier commit, so the bus ends on the
 * source's latest value. Returns the group's record on the bus afterwards.
 */
export async function announceFrom(store: ConfigStore, group: string, load: () => Promise<unknown>, by: string, maxRounds = 5): Promise<ConfigRecord | null> {
  let last: ConfigRecord | null = null;
  for (let round = 0; round < maxRounds; round++) {
    const value = await load();
    const digest = configDigest(value);
    last = await store.get(group);
    if (last?.envelope.digest === digest) return last;
    const revision = await store.put(group, value, by);
    last = { group, revision, envelope: { v: 1, value, digest, at: new Date().toISOString(), by } };
  }
  return last;
}

/**
 * The safety net for a writer that committed and died before it announced: every `everyMs`, check
 * that the bus says what the source says, and announce it if not. Every replica runs one; they
 * agree, so at most one extra put per divergence and round.
 */
export function keepAnnounced(store: ConfigStore, group: string, load: () => Promise<unknown>, by: string, everyMs: number, log: Logger): { stop(): void } {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      const before = await store.get(group);
      const after = await announceFrom(store, group, load, by);
      if (after && after.revision !== before?.revision) log.warn({ group, revision: after.revision }, `config ${group}: the bus lagged its source; announced revision ${after.revision}`);
    } catch (err) {
      log.warn({ err, group }, `config ${group}: could not check the announced value`);
    } finally {
      running = false;
    }
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
