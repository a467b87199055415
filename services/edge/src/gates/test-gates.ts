import type { EdgePresence, Face, GateState } from '@gatehouse/contracts';
import { createLogger, keyDigest, type GateRecord, type GateStore, type Watch } from '@gatehouse/common';
import { LiveGates } from './live-gates.ts';

/**
 * Test support: a LiveGates holding the given states without NATS. It follows an in-memory store
 * through the same path as a real edge (`follow`), so what a face sees is what it would see live.
 * A face given `'unknown'` gets a record that does not parse, so it fails closed as an edge that
 * cannot read its gate does. Call `stop()` when done (follow starts the presence heartbeat).
 */
export async function gatesIn(states: Partial<Record<Face, GateState | 'unknown'>>): Promise<LiveGates> {
  const faces = Object.keys(states) as Face[];
  const gates = new LiveGates(faces, createLogger('test-gates', 'silent'));
  // An `'unknown'` face reads as a record that does not parse.
  const record = (face: Face, revision: number): GateRecord => {
    const s = states[face];
    return s === 'unknown' || !s ? { face, revision, state: null, error: 'test: gate unknown' } : { face, revision, state: s };
  };
  await gates.follow(memoryStore(record));
  return gates;
}

/** An open gate. */
export function openGate(): GateState {
  const at = new Date().toISOString();
  return { v: 1, state: 'open', changedAt: at, changedBy: 'test' };
}

/** An enforced gate accepting `keys` (full access) and `readOnlyKeys`; only digests are kept. */
export function enforcedGate(keys: string[], readOnlyKeys: string[] = []): GateState {
  const at = new Date().toISOString();
  return {
    v: 1,
    state: 'enforced',
    keyDigests: keys.map(keyDigest),
    ...(readOnlyKeys.length ? { readOnlyKeyDigests: readOnlyKeys.map(keyDigest) } : {}),
    changedAt: at,
    changedBy: 'test',
  };
}

function memoryStore(record: (face: Face, revision: number) => GateRecord): GateStore {
  const unused = () => Promise.reject(new Error('not part of the in-memory test store'));
  return {
    get: async (face) => record(face, 1),
    // Nothing changes after the first read: a watch that only ends when stopped.
    watch: async (): Promise<Watch<GateRecord>> => {
      let stop!: () => void;
      const stopped = new Promise<void>((r) => (stop = r));
      return {
        stop,
        async *[Symbol.asyncIterator]() {
          await stopped;
        },
      };
    },
    putPresence: async (_p: EdgePresence) => 1,
    deletePresence: async () => undefined,
    put: unused,
    getEnv: unused,
    putEnv: unused,
    listPresence: unused,
    watchPresence: unused,
  };
}
