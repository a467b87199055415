import { createHash } from 'node:crypto';
import type { KV, KvEntry } from 'nats';
import { z } from 'zod';
import type { Bus } from '../bus/connect.ts';
import { jsonBytes, parseJson } from '../bus/body.ts';
import { mapWatch, snapshot, type Watch } from '../gates/gate-store.ts';

/**
 * Admin settings on the bus: one JetStream KV bucket, one key per setting group
 * (`chat.settings`, `connections`, `webhooks`, …). A key's KV revision is the group's revision:
 * every replica that follows the group applies each new revision live and reports the one it runs
 * (config-presence). File storage, so the values survive a NATS restart.
 */
export const CONFIG_BUCKET = 'gatehouse_config';
/** Which replica runs which revision: one record per running process, gone 15 s after it stops. */
export const CONFIG_PRESENCE_BUCKET = 'gatehouse_config_presence';
export const CONFIG_PRESENCE_TTL_MS = 15_000;
export const CONFIG_HEARTBEAT_MS = 5_000;

/** What the KV holds for a group: the whole value (readers apply it as it is), its digest, who wrote it. */
export const ConfigEnvelope = z.object({
  v: z.literal(1),
  value: z.unknown(),
  /** sha256 of the value's canonical JSON: "is the bus saying what the source of truth says?" without comparing values. */
  digest: z.string(),
  at: z.string(),
  by: z.string(),
});
export type ConfigEnvelope = z.infer<typeof ConfigEnvelope>;

export interface ConfigRecord {
  group: string;
  revision: number;
  envelope: ConfigEnvelope;
}

export const ConfigPresence = z.object({
  v: z.literal(1),
  instance: z.string(),
  /** The process kind (`chat-worker`, `proxy-worker`, …). */
  service: z.string(),
  host: z.string(),
  pid: z.number(),
  startedAt: z.string(),
  heartbeatAt: z.string(),
  /** Per group: the revision this replica runs (0 = none announced yet, it runs its seed default). */
  applied: z.record(z.string(), z.object({ revision: z.number(), digest: z.string(), at: z.string() })),
});
export type ConfigPresence = z.infer<typeof ConfigPresence>;

/** JSON with object keys sorted, so equal values always have equal digests. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export function configDigest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value) ?? 'undefined').digest('hex');
}

/** The put was refused because the group moved past `previousRevision` (someone else wrote first). */
export class ConfigConflictError extends Error {
  override name = 'ConfigConflictError';
}

export interface ConfigStore {
  get(group: string): Promise<ConfigRecord | null>;
  /**
   * Announce a group's new value; returns its revision. With `previousRevision` the put only
   * happens if the group is still at that revision (0: not written yet), else ConfigConflictError.
   */
  put(group: string, value: unknown, by: string, opts?: { previousRevision?: number }): Promise<number>;
  /** The group's current value (if any), then every change, in order. */
  watch(group: string): Promise<Watch<ConfigRecord>>;
  putPresence(p: ConfigPresence): Promise<void>;
  deletePresence(instance: string): Promise<void>;
  /** Every live replica's record (heartbeat within the TTL). */
  listPresence(): Promise<ConfigPresence[]>;
  /** Every presence record as it is written (for watching replicas converge). */
  watchPresence(): Promise<Watch<ConfigPresence>>;
}

function decode(e: KvEntry): ConfigRecord | null {
  if (e.operation !== 'PUT') return null;
  const parsed = ConfigEnvelope.safeParse(parseJson(e.value));
  return parsed.success ? { group: e.key, revision: e.revision, envelope: parsed.data } : null;
}

function decodePresence(e: KvEntry): ConfigPresence | null {
  if (e.operation !== 'PUT') return null;
  const p = ConfigPresence.safeParse(parseJson(e.value));
  return p.success ? p.data : null;
}

const storeCache = new WeakMap<Bus, Promise<ConfigStore>>();

/** Open (creating when missing) the config and presence buckets; one store per connection. */
export function openConfigStore(bus: Bus): Promise<ConfigStore> {
  let p = storeCache.get(bus);
  if (!p) {
    p = createStore(bus);
    storeCache.set(bus, p);
    p.catch(() => storeCache.delete(bus));
  }
  return p;
}

async function createStore(bus: Bus): Promise<ConfigStore> {
  const kv: KV = await bus.js.views.kv(bus.bucket(CONFIG_BUCKET), { history: 10 });
  const presence: KV = await bus.js.views.kv(bus.bucket(CONFIG_PRESENCE_BUCKET), { history: 1, ttl: CONFIG_PRESENCE_TTL_MS });
  return {
    async get(group) {
      const e = await kv.get(group);
      return e ? decode(e) : null;
    },
    async put(group, value, by, opts = {}) {
      const envelope: ConfigEnvelope = { v: 1, value, digest: configDigest(value), at: new Date().toISOString(), by };
      try {
        return await kv.put(group, jsonBytes(envelope), opts.previousRevision === undefined ? {} : { previousSeq: opts.previousRevision });
      } catch (err) {
        // JetStream's "wrong last sequence" (err_code 10071): the optimistic write lost the race.
        if (opts.previousRevision !== undefined && /wrong last sequence/i.test((err as Error).message)) {
          throw new ConfigConflictError(`${group} moved past revision ${opts.previousRevision}`);
        }
        throw err;
      }
    },
    async watch(group) {
      return mapWatch(await kv.watch({ key: group }), decode);
    },
    async putPresence(p) {
      await presence.put(p.instance, jsonBytes(p));
    },
    async deletePresence(instance) {
      await presence.delete(instance);
    },
    async listPresence() {
      // Not kv.keys(): it can end early on nats.js 2.29 (see gate-store.ts snapshot).
      const out: ConfigPresence[] = [];
      for (const e of await snapshot(presence)) {
        const p = decodePresence(e);
        if (p && Date.now() - Date.parse(p.heartbeatAt) < CONFIG_PRESENCE_TTL_MS) out.push(p);
      }
      return out;
    },
    async watchPresence() {
      return mapWatch(await presence.watch(), decodePresence);
    },
  };
}
