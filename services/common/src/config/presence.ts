import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger.ts';
import { CONFIG_HEARTBEAT_MS, type ConfigPresence, type ConfigStore } from './config-store.ts';
import type { LiveConfig } from './live-config.ts';

/**
 * Says which revision of each followed group this process runs: a record in the presence bucket,
 * written at once after every applied revision and every few seconds. `scripts/config status`,
 * the chat face's config status and the tests read it.
 */
export class ConfigReporter {
  readonly instance: string;
  private readonly startedAt = new Date().toISOString();
  private readonly followed: LiveConfig<unknown>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly store: ConfigStore,
    readonly service: string,
    private readonly log: Logger,
  ) {
    this.instance = `${service}-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }

  /** Report this group too, now and after each of its changes. */
  // biome-ignore lint/suspicious/noExplicitAny: a group of any settings type; LiveConfig<unknown> would refuse them (onChange takes T).
  track(live: LiveConfig<any>): void {
    this.followed.push(live as LiveConfig<unknown>);
    live.onChange(() => void this.report());
  }

  start(): Promise<void> {
    this.timer = setInterval(() => void this.report(), CONFIG_HEARTBEAT_MS);
    this.timer.unref();
    // Withdraw the record as soon as the process is asked to stop, while the connection is still
    // up (the shutdown drains it before any cleanup runs): a stopped replica must not be listed as
    // running an old revision until its record expires.
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void this.stop());
    return this.report();
  }

  /** What this replica runs, as its presence record says it. */
  snapshot(): ConfigPresence {
    const applied: ConfigPresence['applied'] = {};
    for (const l of this.followed) applied[l.group] = { revision: l.applied.revision, digest: l.applied.digest, at: l.applied.at };
    const now = new Date().toISOString();
    return { v: 1, instance: this.instance, service: this.service, host: hostname(), pid: process.pid, startedAt: this.startedAt, heartbeatAt: now, applied };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.store.deletePresence(this.instance).catch(() => undefined);
  }

  private async report(): Promise<void> {
    if (this.stopped) return;
    await this.store.putPresence(this.snapshot()).catch((err) => this.log.warn({ err }, 'could not report config presence'));
  }
}
