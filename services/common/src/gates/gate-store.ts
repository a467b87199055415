import type { KV, KvEntry, QueuedIterator } from 'nats';
import {
  EDGE_PRESENCE_BUCKET,
  EdgePresence,
  EnvObservation,
  GATE_BUCKET,
  GateState,
  type Face,
} from '@gatehouse/contracts';
import type { Bus } from '../bus/connect.ts';
import { parseJson } from '../bus/body.ts';
import { jsonBytes } from '../bus/body.ts';

/** How long an edge instance counts as live after its last heartbeat. */
export const PRESENCE_TTL_MS = 15_000;
export const HEARTBEAT_MS = 5_000;

export interface GateRecord {
  face: Face;
  revision: number;
  /** null when the stored value is missing, deleted or does not parse: callers fail closed. */
  state: GateState | null;
  error?: string;
}

/** A KV watch: iterate it; `stop()` ends the iteration even while it waits. */
export type Watch<T> = AsyncIterable<T> & { stop(): void };

export function mapWatch<T>(w: QueuedIterator<KvEntry>, f: (e: KvEntry) => T | null): Watch<T> {
  return {
    stop: () => w.stop(),
    async *[Symbol.asyncIterator]() {
      for await (const e of w) {
        const v = f(e);
        if (v) yield v;
      }
    },
  };
}

/**
 * Current value of every key. Not `kv.keys()`: on nats.js 2.29 it can end before the last key
 * when the bucket has deleted revisions (seen with presence heartbeats), and a missed edge would
 * let a flip return before that edge applied it. A watch replays every key's last value reliably.
 */
export async function snapshot(kv: KV): Promise<KvEntry[]> {
  const latest = new Map<string, KvEntry>();
  let initialized!: () => void;
  const ready = new Promise<void>((r) => (initialized = r));
  const w = await kv.watch({ initializedFn: () => initialized() });
  const pump = (async () => {
    for await (const e of w) {
      const prev = latest.get(e.key);
      if (!prev || prev.revision < e.revision) latest.set(e.key, e);
    }
  })();
  await ready;
  w.stop();
  await pump;
  return [...latest.values()].filter((e) => e.operation === 'PUT');
}

export interface GateStore {
  get(face: Face): Promise<GateRecord | null>;
  put(face: Face, state: GateState): Promise<number>;
  getEnv(face: Face): Promise<EnvObservation | null>;
  putEnv(face: Face, obs: EnvObservation): Promise<number>;
  /** Current value of every gate, then every change, in order. */
  watch(): Promise<Watch<GateRecord>>;
  putPresence(p: EdgePresence): Promise<number>;
  deletePresence(instance: string): Promise<void>;
  listPresence(): Promise<EdgePresence[]>;
  watchPresence(): Promise<Watch<EdgePresence>>;
}

const gateKey = (face: Face) => `gate.${face}`;
const envKey = (face: Face) => `env.${face}`;

export function decodeGate(e: KvEntry): GateRecord | null {
  const m = /^gate\.(.+)$/.exec(e.key);
  if (!m) return null;
  const face = m[1] as Face;
  if (e.operation !== 'PUT') return { face, revision: e.revision, state: null, error: `gate record ${e.operation.toLowerCase()}d` };
  try {
    return { face, revision: e.revision, state: GateState.parse(parseJson(e.value)) };
  } catch (err) {
    return { face, revision: e.revision, state: null, error: `gate record does not parse: ${(err as Error).message}` };
  }
}

/** Open (creating when missing) the KV buckets that hold gate state and edge presence. */
export async function openGateStore(bus: Bus): Promise<GateStore> {
  const gates: KV = await bus.js.views.kv(bus.bucket(GATE_BUCKET), { history: 10 });
  const presence: KV = await bus.js.views.kv(bus.bucket(EDGE_PRESENCE_BUCKET), { history: 1, ttl: PRESENCE_TTL_MS });

  return {
    async get(face) {
      const e = await gates.get(gateKey(face));
      return e ? decodeGate(e) : null;
    },
    put: (face, state) => gates.put(gateKey(face), jsonBytes(GateState.parse(state))),
    async getEnv(face) {
      const e = await gates.get(envKey(face));
      if (!e || e.operation !== 'PUT') return null;
      const parsed = EnvObservation.safeParse(parseJson(e.value));
      return parsed.success ? parsed.data : null;
    },
    putEnv: (face, obs) => gates.put(envKey(face), jsonBytes(obs)),
    async watch() {
      return mapWatch(await gates.watch({ key: 'gate.*' }), decodeGate);
    },
    putPresence: (p) => presence.put(p.instance, jsonBytes(p)),
    async deletePresence(instance) {
      await presence.delete(instance);
    },
    async listPresence() {
      const out: EdgePresence[] = [];
      for (const e of await snapshot(presence)) {
        const p = EdgePresence.safeParse(parseJson(e.value));
        if (p.success && Date.now() - Date.parse(p.data.heartbeatAt) < PRESENCE_TTL_MS) out.push(p.data);
      }
      return out;
    },
    async watchPresence() {
      return mapWatch(await presence.watch(), (e) => {
        if (e.operation !== 'PUT') return null;
        const p = EdgePresence.safeParse(parseJson(e.value));
        return p.success ? p.data : null;
      });
    },
  };
}
