import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { EdgePresence, Face, GateState } from '@gatehouse/contracts';
import { gateRevision, gateState, HEARTBEAT_MS, type GateRecord, type GateStore, type Logger, type Watch } from '@gatehouse/common';

export type AppliedState =
  | { status: 'ready'; state: GateState; revision: number; at: string }
  | { status: 'unknown'; reason: string; revision: number; at: string };

/**
 * The gate states this edge instance enforces, kept in step with the KV bucket by a watch.
 * Anything short of a parsed, current record is `unknown`, and unknown fails closed (503): there
 * is no path on which a failure leaves a gate silently open.
 */
export class LiveGates {
  readonly instance = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly startedAt = new Date().toISOString();
  private readonly applied = new Map<Face, AppliedState>();
  private readonly listeners: ((face: Face, s: AppliedState) => void)[] = [];
  private store: GateStore | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private watch: Watch<GateRecord> | undefined;
  private stopped = false;

  constructor(
    readonly faces: readonly Face[],
    private readonly log: Logger,
  ) {
    for (const f of faces) this.set(f, { status: 'unknown', reason: 'gate state not loaded yet', revision: 0, at: now() });
  }

  get(face: Face): AppliedState {
    return this.applied.get(face) ?? { status: 'unknown', reason: 'face not served here', revision: 0, at: now() };
  }

  /** Called synchronously after every change, before the change is reported as applied. */
  onChange(listener: (face: Face, s: AppliedState) => void): void {
    this.listeners.push(listener);
  }

  degraded(): string[] {
    return this.faces.flatMap((f) => {
      const s = this.get(f);
      return s.status === 'unknown' ? [`${f}: ${s.reason}`] : [];
    });
  }

  /** Follow the store: apply every record the watch delivers, report presence, heartbeat. */
  async follow(store: GateStore): Promise<void> {
    this.store = store;
    for (const f of this.faces) {
      const rec = await store.get(f);
      this.apply(rec ?? { face: f, revision: 0, state: null, error: 'no gate record in the store' });
    }
    await this.report();
    this.heartbeat = setInterval(() => void this.report(), HEARTBEAT_MS);
    void this.watchLoop(store);
  }

  /** NATS went away: we can no longer know the desired state, so fail closed until it is back. */
  lost(reason: string): void {
    for (const f of this.faces) {
      const s = this.get(f);
      this.set(f, { status: 'unknown', reason, revision: s.revision, at: now() });
    }
  }

  /** NATS is back: re-read every gate (a change made while we were away is not re-delivered). */
  async reload(): Promise<void> {
    if (!this.store) return;
    for (const f of this.faces) {
      const rec = await this.store.get(f);
      this.apply(rec ?? { face: f, revision: 0, state: null, error: 'no gate record in the store' });
    }
    await this.report();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    this.watch?.stop();
    await this.store?.deletePresence(this.instance).catch(() => undefined);
  }

  private async watchLoop(store: GateStore): Promise<void> {
    while (!this.stopped) {
      try {
        this.watch = await store.watch();
        for await (const rec of this.watch) {
          if (this.stopped) return;
          if (!this.faces.includes(rec.face)) continue;
          this.apply(rec);
          await this.report();
        }
      } catch (err) {
        if (this.stopped) return;
        this.log.error({ err }, 'gate watch failed; gated routes answer 503 until it is back');
        this.lost(`gate watch failed: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 500));
      if (!this.stopped) await this.reload().catch(() => undefined);
    }
  }

  private apply(rec: GateRecord): void {
    const prev = this.applied.get(rec.face);
    // The watch replays the current value after a reconnect: never go back to an older revision.
    if (prev?.status === 'ready' && rec.revision < prev.revision) return;
    // The first read and the watch's replay deliver the same record: nothing to apply twice.
    if (prev?.status === 'ready' && rec.state && rec.revision === prev.revision) return;
    const next: AppliedState = rec.state
      ? { status: 'ready', state: rec.state, revision: rec.revision, at: now() }
      : { status: 'unknown', reason: rec.error ?? 'gate record unusable', revision: rec.revision, at: now() };
    this.set(rec.face, next);
    if (next.status === 'ready') {
      this.log.info(
        { face: rec.face, revision: rec.revision, gate: next.state.state },
        gateLogLine(rec.face, next.state.state),
      );
    } else {
      this.log.error({ face: rec.face, revision: rec.revision, reason: next.reason }, `${rec.face} gate: state unusable, failing closed (503)`);
    }
  }

  private set(face: Face, s: AppliedState): void {
    this.applied.set(face, s);
    gateState.set({ face }, s.status === 'ready' ? (s.state.state === 'enforced' ? 1 : 0) : -1);
    gateRevision.set({ face }, s.revision);
    for (const l of this.listeners) l(face, s);
  }

  private async report(): Promise<void> {
    if (!this.store || this.stopped) return;
    const applied: EdgePresence['applied'] = {};
    for (const f of this.faces) {
      const s = this.get(f);
      applied[f] = { revision: s.revision, state: s.status === 'ready' ? s.state.state : 'unknown', at: s.at };
    }
    const presence: EdgePresence = {
      v: 1,
      instance: this.instance,
      host: hostname(),
      pid: process.pid,
      startedAt: this.startedAt,
      heartbeatAt: now(),
      applied,
      degraded: this.degraded(),
    };
    await this.store.putPresence(presence).catch((err) => this.log.warn({ err }, 'could not report edge presence'));
  }
}

/** The speech gateway's lines are worded as documented (docs/gates.md); operators grep for them. */
function gateLogLine(face: Face, state: 'open' | 'enforced'): string {
  if (face === 'speech') {
    return state === 'enforced'
      ? 'speech gate: bearer token authentication is enabled'
      : 'speech gate: auth middleware is not installed and the API is open';
  }
  return state === 'enforced' ? `${face} gate: enforced, a key is required` : `${face} gate: open, no key is required`;
}

function now(): string {
  return new Date().toISOString();
}
