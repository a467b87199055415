import type { Sql } from 'postgres';
import { z } from 'zod';
import {
  announceFrom,
  keepAnnounced,
  LiveConfig,
  loadRegistryValue,
  loadWebhooks,
  WEBHOOKS_CONFIG_GROUP,
  type ConfigStore,
  type LoadedWebhook,
  type Logger,
  type WebhookRegistryValue,
} from '@gatehouse/common';

const RegistryValue = z.object({
  v: z.literal(1),
  hooks: z.array(z.object({ id: z.string(), enabled: z.boolean(), fingerprint: z.string() })),
});
const parse = (raw: unknown): WebhookRegistryValue => RegistryValue.parse(raw);
const EMPTY: WebhookRegistryValue = { v: 1, hooks: [] };

/**
 * The webhook registry as this dispatcher replica runs it, kept in step with the config bucket's
 * `webhooks` group (docs/config.md). The group carries fingerprints, not the rows (the secrets stay
 * in Postgres: see `registryValue`), so applying a revision means reading the rows:
 *
 * - `announced` follows the bucket (watch + re-read every `recheckMs`);
 * - each new announced revision makes this replica read the rows, and only once they are in hand is
 *   `running` moved to that revision — `running` is what the presence record (configs/status,
 *   `scripts/config status`) reports, so a replica that could not read Postgres shows as behind.
 *
 * Rows read after revision N was announced hold at least N's state (the writer announced after its
 * commit), so reporting N is never ahead of what runs.
 */
export class WebhookRegistry {
  readonly announced: LiveConfig<WebhookRegistryValue>;
  readonly running: LiveConfig<WebhookRegistryValue>;
  hooks = new Map<string, LoadedWebhook>();
  private store: ConfigStore | undefined;
  private syncing: Promise<void> | undefined;
  private syncAgain = false;
  private retry: NodeJS.Timeout | undefined;
  private reconciler: { stop(): void } | undefined;
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly by: string,
    private readonly log: Logger,
    private readonly reconcileMs = 10_000,
  ) {
    this.announced = new LiveConfig({ group: WEBHOOKS_CONFIG_GROUP, parse, initial: EMPTY, log, recheckMs: reconcileMs });
    // Not following anything itself: moved by sync() once the rows of a revision are loaded.
    this.running = new LiveConfig({ group: WEBHOOKS_CONFIG_GROUP, parse, initial: EMPTY, log });
  }

  /**
   * Announce what Postgres holds (a no-op when the bucket agrees), load the rows, run that revision,
   * then follow the group. The dispatcher can read the source, so it also runs the reconciler that
   * repairs a writer which committed and died before announcing.
   */
  async start(store: ConfigStore): Promise<void> {
    this.store = store;
    const rec = await announceFrom(store, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(this.sql), this.by).catch((err) => {
      this.log.warn({ err }, 'webhook registry not announced at start; following what the bucket says');
      return store.get(WEBHOOKS_CONFIG_GROUP);
    });
    if (rec) this.announced.apply(rec);
    await this.load();
    if (rec) this.running.apply(rec);
    this.announced.onChange(() => this.sync());
    await this.announced.follow(store);
    this.reconciler = keepAnnounced(store, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(this.sql), this.by, this.reconcileMs, this.log);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.reconciler?.stop();
    this.announced.stop();
  }

  /** After this replica changed the registry itself (a webhook disabled for failing): tell the others. */
  async announce(): Promise<void> {
    if (!this.store) return;
    const rec = await announceFrom(this.store, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(this.sql), this.by);
    if (rec) this.log.info({ group: WEBHOOKS_CONFIG_GROUP, revision: rec.revision }, `config ${WEBHOOKS_CONFIG_GROUP}: saved here, announced as revision ${rec.revision}`);
  }

  /** Read every webhook from Postgres (targets resolved to users). */
  async load(): Promise<void> {
    const hooks = await loadWebhooks(this.sql);
    this.hooks = new Map(hooks.map((h) => [h.id, h]));
  }

  /**
   * Group members change without the registry changing: before matching a batch, re-resolve the
   * group targets (one query, and only when some webhook targets a group), so every replica
   * matches against the membership of now, not of its last registry revision.
   */
  async refreshMembers(): Promise<void> {
    const groupIds = [...new Set([...this.hooks.values()].flatMap((h) => (h.targets ?? []).filter((t) => t.type === 'group').map((t) => t.id)))];
    if (!groupIds.length) return;
    const members = new Map<string, string[]>();
    for (const m of await this.sql<{ group_id: string; user_id: string }[]>`select group_id, user_id from group_member where group_id = any(${groupIds})`) {
      members.set(m.group_id, [...(members.get(m.group_id) ?? []), m.user_id]);
    }
    for (const h of this.hooks.values()) {
      if (h.targets === null || !h.targets.some((t) => t.type === 'group')) continue;
      h.targetUsers = new Set(h.targets.flatMap((t) => (t.type === 'user' ? [t.id] : (members.get(t.id) ?? []))));
    }
  }

  /** A newer revision was announced: read the rows, then run (and report) it. One read at a time; the last one covers every revision seen before it started. */
  private sync(): void {
    if (this.stopped) return;
    if (this.syncing) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        const target = this.announced.applied;
        await this.load();
        this.running.apply({ group: WEBHOOKS_CONFIG_GROUP, revision: target.revision, envelope: { v: 1, value: target.value, digest: target.digest, at: target.at, by: this.by } });
      } while (this.syncAgain && !this.stopped);
    })()
      .catch((err) => {
        // Postgres away: this replica keeps the rows it has, reports the older revision, and tries again.
        this.log.warn({ err: (err as Error).message }, `config ${WEBHOOKS_CONFIG_GROUP}: could not read the registry; trying again`);
        this.retry = setTimeout(() => this.sync(), 1000);
        this.retry.unref();
      })
      .finally(() => {
        this.syncing = undefined;
      });
  }
}
