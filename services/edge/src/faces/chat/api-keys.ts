import { createHash } from 'node:crypto';
import { z } from 'zod';
import { API_KEY_ERRORS, API_KEYS_INVALIDATE_SUBJECT, ApiKeysInvalidate, apiKeyResolveContract, OWUI_ERRORS } from '@gatehouse/contracts';
import { busRequest, BusError, LiveConfig, openConfigStore, type Bus, type Logger } from '@gatehouse/common';

/**
 * API keys (`sk-…`) checked at the edge without a database round trip per request:
 * - the settings that govern them (ENABLE_API_KEYS, ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS,
 *   API_KEYS_ALLOWED_ENDPOINTS) come from the config bucket's `chat.settings` group, followed live
 *   like every replica follows it (a toggle applies on the next request, no cache to drop);
 * - who owns a key is cached by the key's SHA-256 digest, filled on the first use at this edge
 *   (`chat.apikeys.resolve`, one indexed query at a worker) and dropped when a worker publishes
 *   `chat.apikeys.invalidate` (key deleted or replaced, user changed or deleted). A resolve that
 *   raced an invalidation is used once and not kept, so a stale answer cannot stick. Entries also
 *   expire after `ttlMs`, a safety net for a notification lost while NATS was away (group
 *   permission edits, which nothing announces, take effect within it too).
 * The key itself is never kept; only its digest.
 */

/** What the edge needs from the chat settings (the bus carries the stored rows, key → value). */
const KeySettings = z.object({
  ENABLE_API_KEYS: z.boolean().catch(false).default(false),
  ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: z.boolean().catch(false).default(false),
  API_KEYS_ALLOWED_ENDPOINTS: z.string().catch('').default(''),
});
type KeySettings = z.infer<typeof KeySettings>;
const parseKeySettings = (raw: unknown): KeySettings => KeySettings.parse(raw && typeof raw === 'object' ? raw : {});

interface Entry {
  userId: string;
  allowed: boolean;
  expires: number;
}

export interface ApiKeyGateOptions {
  bus: () => Bus | undefined;
  log: Logger;
  /** How long an owner lookup is kept without any notification (safety net). */
  ttlMs?: number;
  maxEntries?: number;
}

export class ApiKeyGate {
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<{ user_id: string | null; allowed: boolean }>>();
  private settings: LiveConfig<KeySettings> | undefined;
  private starting: Promise<void> | undefined;
  /** Bumped by every invalidation: a lookup that started before one is not cached. */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(private readonly opts: ApiKeyGateOptions) {
    this.ttlMs = opts.ttlMs ?? 5 * 60_000;
    this.maxEntries = opts.maxEntries ?? 50_000;
  }

  static digest(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  /**
   * The user a key stands for on `path`, or Open WebUI's error: endpoint not allowed (403, checked
   * first, as its middleware does), unknown key (401), keys off or not permitted for this user (403).
   */
  async authenticate(key: string, path: string): Promise<string> {
    const settings = await this.current();
    if (settings.ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS && !endpointAllowed(settings.API_KEYS_ALLOWED_ENDPOINTS, path)) {
      throw new BusError(403, API_KEY_ERRORS.endpointNotAllowed);
    }
    const owner = await this.owner(ApiKeyGate.digest(key));
    if (!owner.userId) throw new BusError(401, OWUI_ERRORS.invalidToken);
    if (!settings.ENABLE_API_KEYS || !owner.allowed) throw new BusError(403, API_KEY_ERRORS.notAllowed);
    return owner.userId;
  }

  /** Cached entries (tests and the bench read it). */
  get size(): number {
    return this.cache.size;
  }

  private async owner(hash: string): Promise<{ userId: string | null; allowed: boolean }> {
    const hit = this.cache.get(hash);
    if (hit && hit.expires > Date.now()) return hit;
    if (hit) this.cache.delete(hash);
    let pending = this.inflight.get(hash);
    if (!pending) {
      const bus = this.requireBus();
      const gen = this.generation;
      pending = busRequest(bus, apiKeyResolveContract, { hash }, { timeoutMs: 10_000 }).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
      void pending.then(
        (r) => {
          // Only usable keys are kept: a refused one is asked about again, so it answers what the
          // worker knows now (a since-deleted user's key is then "invalid", as Open WebUI says).
          if (r.user_id && r.allowed && gen === this.generation) {
            if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
            this.cache.set(hash, { userId: r.user_id, allowed: r.allowed, expires: Date.now() + this.ttlMs });
          }
        },
        () => undefined,
      );
    }
    const r = await pending;
    return { userId: r.user_id, allowed: r.allowed };
  }

  private requireBus(): Bus {
    const bus = this.opts.bus();
    if (!bus) throw new BusError(503, 'The chat service is not connected to its bus yet; try again shortly.');
    return bus;
  }

  /** The key settings in force; the first call subscribes to invalidations and follows the settings. */
  private async current(): Promise<KeySettings> {
    if (!this.settings) {
      this.starting ??= this.start(this.requireBus()).catch((err) => {
        this.starting = undefined;
        throw err;
      });
      await this.starting;
    }
    return this.settings!.value;
  }

  private async start(bus: Bus): Promise<void> {
    // Subscribed before anything is cached, so no invalidation can be missed for a cached entry.
    const sub = bus.nc.subscribe(bus.subject(API_KEYS_INVALIDATE_SUBJECT));
    void (async () => {
      for await (const m of sub) {
        const r = ApiKeysInvalidate.safeParse(safeJson(m.data));
        if (r.success) this.invalidate(r.data);
      }
    })();
    // A reconnect may have dropped invalidations: forget everything then.
    void (async () => {
      for await (const s of bus.nc.status()) if (s.type === 'reconnect') this.invalidate({ all: true });
    })();
    const live = new LiveConfig<KeySettings>({ group: 'chat.settings', parse: parseKeySettings, initial: parseKeySettings({}), log: this.opts.log });
    await live.follow(await openConfigStore(bus));
    this.settings = live;
  }

  invalidate(what: ApiKeysInvalidate): void {
    this.generation++;
    if ('all' in what) {
      this.cache.clear();
      return;
    }
    for (const [hash, e] of this.cache) if (e.userId === what.user_id) this.cache.delete(hash);
  }

  stop(): void {
    this.settings?.stop();
  }
}

/** Open WebUI's APIKeyRestrictionMiddleware: the path equals an allowed entry or lies below it. */
export function endpointAllowed(list: string, path: string): boolean {
  const allowed = list.split(',').map((p) => p.trim()).filter(Boolean);
  return allowed.some((a) => path === a || path.startsWith(`${a}/`));
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}
