import type { Logger } from '../logger.ts';
import type { Watch } from '../gates/gate-store.ts';
import { configDigest, type ConfigRecord, type ConfigStore } from './config-store.ts';

export interface LiveConfigOptions<T> {
  /** The KV key (`chat.settings`, `connections`, …). */
  group: string;
  /** Announced value → what the process uses. Throwing rejects it: the previous value stays, logged once. */
  parse(raw: unknown): T;
  /** What runs before anything was announced (the seed default, e.g. from the environment): revision 0. */
  initial: T;
  log: Logger;
  /**
   * How often the current revision is read again besides the watch, so a delivery missed while
   * NATS was away (or a watch that died quietly) cannot leave this replica stale for longer.
   */
  recheckMs?: number;
}

export interface Applied<T> {
  value: T;
  /** KV revision of the group; 0 = nothing announced yet (the seed default runs). */
  revision: number;
  digest: string;
  at: string;
}

/**
 * One setting group as this replica runs it, kept in step with the config bucket: the current
 * value is loaded at start, then every announced revision is applied as it arrives (never an older
 * one after a newer one), and the revision is re-read every `recheckMs` as a safety net.
 */
export class LiveConfig<T> {
  private current: Applied<T>;
  private readonly listeners: ((a: Applied<T>, previous: Applied<T>) => void)[] = [];
  private store: ConfigStore | undefined;
  private watch: Watch<ConfigRecord> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private rejected = 0;

  constructor(private readonly opts: LiveConfigOptions<T>) {
    this.current = { value: opts.initial, revision: 0, digest: '', at: new Date().toISOString() };
  }

  get group(): string {
    return this.opts.group;
  }
  get value(): T {
    return this.current.value;
  }
  get applied(): Applied<T> {
    return this.current;
  }

  /** Called synchronously after each applied revision with the new and the previous state (receivers can diff). */
  onChange(listener: (a: Applied<T>, previous: Applied<T>) => void): void {
    this.listeners.push(listener);
  }

  /** Load the current revision (start-up waits for it), then follow the bucket. */
  async follow(store: ConfigStore): Promise<void> {
    this.store = store;
    await this.reload();
    void this.watchLoop(store);
    this.timer = setInterval(() => void this.reload().catch(() => undefined), this.opts.recheckMs ?? 10_000);
    this.timer.unref();
  }

  /** Read the group's current revision and apply it if it is newer than the one running. */
  async reload(): Promise<void> {
    if (!this.store) return;
    const rec = await this.store.get(this.opts.group);
    if (rec) this.apply(rec);
  }

  /**
   * Apply a record (from the watch, a reload, or this replica's own announcement — so the writer
   * runs its change before it answers). Returns whether it changed what runs.
   */
  apply(rec: ConfigRecord): boolean {
    if (rec.revision <= this.current.revision) return false;
    let value: T;
    try {
      value = this.opts.parse(rec.envelope.value);
    } catch (err) {
      if (this.rejected !== rec.revision) {
        this.rejected = rec.revision;
        this.opts.log.error({ group: this.opts.group, revision: rec.revision, err: (err as Error).message }, `config ${this.opts.group}: revision ${rec.revision} rejected, keeping revision ${this.current.revision}`);
      }
      return false;
    }
    const previous = this.current;
    this.current = { value, revision: rec.revision, digest: rec.envelope.digest || configDigest(rec.envelope.value), at: new Date().toISOString() };
    this.opts.log.info({ group: this.opts.group, revision: rec.revision, by: rec.envelope.by }, `config ${this.opts.group}: applied revision ${rec.revision}`);
    for (const l of this.listeners) l(this.current, previous);
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.watch?.stop();
  }

  private async watchLoop(store: ConfigStore): Promise<void> {
    while (!this.stopped) {
      try {
        this.watch = await store.watch(this.opts.group);
        for await (const rec of this.watch) {
          if (this.stopped) return;
          this.apply(rec);
        }
      } catch (err) {
        if (this.stopped) return;
        this.opts.log.warn({ err, group: this.opts.group }, `config ${this.opts.group}: watch failed, following again`);
      }
      if (this.stopped) return;
      await new Promise((r) => setTimeout(r, 500));
      await this.reload().catch(() => undefined);
    }
  }
}
