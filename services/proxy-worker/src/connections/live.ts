import type { ConnectionsUpdateReply, ConnectionsUpdateRequest } from '@gatehouse/contracts';
import { BusError, ConfigConflictError, configDigest, LiveConfig, type ConfigStore, type Logger } from '@gatehouse/common';
import type { z } from 'zod';
import type { ProxyConfig } from '../upstream/config.ts';
import { ConnectionsConfigError, loadConnectionsConfig, StoredConnections, updateOllama, updateOpenAI, type ConnectionsConfig } from './config.ts';
import { ConnectionRegistry } from './registry.ts';
import { connectionsView } from './view.ts';

/** The config bucket's key for the model connections. */
export const CONNECTIONS_GROUP = 'connections';

/**
 * The connections this proxy worker runs: the environment's (the seed) overlaid with what admins
 * saved in the config bucket, group `connections`. Every announced revision is applied live: the
 * registry is rebuilt (a fresh model-list cache, so the next listing asks the new connections).
 */
export class LiveConnections {
  readonly live: LiveConfig<StoredConnections>;
  private running: ConnectionsConfig;
  private reg: ConnectionRegistry;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly proxy: ProxyConfig,
    private readonly log: Logger,
  ) {
    this.running = loadConnectionsConfig(env);
    this.reg = new ConnectionRegistry(this.running, proxy, log);
    this.live = new LiveConfig<StoredConnections>({
      group: CONNECTIONS_GROUP,
      // A value that would not load is rejected (the previous one keeps running), never half-applied.
      parse: (raw) => {
        const stored = StoredConnections.parse(raw);
        loadConnectionsConfig(env, stored);
        return stored;
      },
      initial: {},
      log,
    });
    this.live.onChange((a) => {
      this.running = loadConnectionsConfig(this.env, a.value);
      this.reg = new ConnectionRegistry(this.running, this.proxy, this.log);
    });
  }

  get config(): ConnectionsConfig {
    return this.running;
  }
  get registry(): ConnectionRegistry {
    return this.reg;
  }

  follow(store: ConfigStore): Promise<void> {
    return this.live.follow(store);
  }

  /**
   * `llm.connections.update`: merge the form into what runs at the group's current revision and
   * put it only if the group is still there (another replica's concurrent update is re-read and
   * merged again, never overwritten). Answers once this replica runs the new revision.
   */
  async update(store: ConfigStore, req: z.infer<typeof ConnectionsUpdateRequest>): Promise<z.input<typeof ConnectionsUpdateReply>> {
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.live.reload();
      const base = this.live.applied;
      const next: StoredConnections = {
        ...base.value,
        ...(req.openai ? { openai: updateOpenAI(this.running, req.openai) } : {}),
        ...(req.ollama ? { ollama: updateOllama(this.running, req.ollama) } : {}),
      };
      try {
        loadConnectionsConfig(this.env, next);
      } catch (err) {
        if (err instanceof ConnectionsConfigError) throw new BusError(400, err.message.trim());
        throw err;
      }
      let revision: number;
      try {
        revision = await store.put(CONNECTIONS_GROUP, next, req.by, { previousRevision: base.revision });
      } catch (err) {
        if (err instanceof ConfigConflictError) continue;
        throw err;
      }
      this.log.info({ group: CONNECTIONS_GROUP, revision, by: req.by }, `config connections: stored revision ${revision}`);
      this.live.apply({ group: CONNECTIONS_GROUP, revision, envelope: { v: 1, value: next, digest: configDigest(next), at: new Date().toISOString(), by: req.by } });
      return { ...connectionsView(this.running), revision };
    }
    throw new BusError(409, 'The connections were changed by someone else at the same moment; try again.');
  }
}
