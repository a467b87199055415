import { FACES, type EdgePresence, type Face, type GateState } from '@gatehouse/contracts';
import { keyDigest, publishPlatformEvent, type Bus, type GateStore } from '@gatehouse/common';

export interface FlipResult {
  revision: number;
  applied: string[];
  lagging: string[];
}

export function isFace(s: string | undefined): s is Face {
  return s !== undefined && Object.hasOwn(FACES, s);
}

export function enforcedState(keys: string[], by: string): GateState {
  return { v: 1, state: 'enforced', keyDigests: keys.map(keyDigest), changedAt: new Date().toISOString(), changedBy: by };
}

export function openState(by: string): GateState {
  return { v: 1, state: 'open', changedAt: new Date().toISOString(), changedBy: by };
}

/**
 * Write a gate's desired state and wait until every live edge instance serving that face reports
 * it applied that revision (or a later one). Instances are those with a fresh heartbeat at the
 * moment of the write; one that does not follow within `timeoutMs` is named in `lagging`.
 */
export async function flipGate(store: GateStore, face: Face, state: GateState, timeoutMs = 5000, events?: Bus): Promise<FlipResult> {
  const live = (await store.listPresence()).filter((p) => face in p.applied);
  const waiting = new Set(live.map((p) => p.instance));
  const presence = await store.watchPresence();
  const revision = await store.put(face, state);
  // Webhook subscribers hear of it on the EVENTS stream (gate.enforced / gate.opened). The gate
  // is already flipped: a publish that fails is reported, not a reason to fail the flip.
  if (events) {
    await publishPlatformEvent(events, state.state === 'open' ? 'gate.opened' : 'gate.enforced', {
      subject: { type: 'gate', id: face },
      data: { face, revision, who: state.changedBy },
      source: 'gate-cli',
    }).catch((err) => process.stderr.write(`gate ${face}: flipped, but the gate event was not published (${(err as Error).message})\n`));
  }
  const applied: string[] = [];
  const done = (p: EdgePresence) => {
    const a = p.applied[face];
    if (waiting.has(p.instance) && a && a.revision >= revision) {
      waiting.delete(p.instance);
      applied.push(p.instance);
    }
  };
  const it = presence[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  try {
    while (waiting.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([
        it.next(),
        new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), left))),
      ]);
      clearTimeout(timer);
      if (next === 'timeout' || next.done) break;
      done(next.value);
    }
  } finally {
    presence.stop();
  }
  return { revision, applied, lagging: [...waiting] };
}
