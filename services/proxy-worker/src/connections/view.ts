import type { ConnectionInfo, ConnectionsConfigReply } from '@gatehouse/contracts';
import type { Connection, ConnectionsConfig } from './config.ts';

/**
 * `llm.connections.config`: the connections as an admin may see them (the chat face's
 * `/openai/config` and `/ollama/config`). Built field by field from the config, so a key or a
 * configured header (which may carry a credential) cannot slip through: only `key_set` says
 * whether a key is there.
 */
export function connectionInfo(c: Connection): ConnectionInfo {
  return {
    idx: c.idx,
    url: c.url,
    enable: c.enabled,
    prefix_id: c.prefixId ?? null,
    model_ids: [...c.modelIds],
    tags: c.tags.map((t) => ({ name: t.name })),
    connection_type: c.connectionType,
    ...(c.kind === 'openai' ? { auth_type: c.authType } : {}),
    key_set: Boolean(c.key),
  };
}

export function connectionsView(config: ConnectionsConfig): ConnectionsConfigReply {
  return {
    ollama: { enabled: config.ollama.enabled, connections: config.ollama.connections.map(connectionInfo) },
    openai: { enabled: config.openai.enabled, connections: config.openai.connections.map(connectionInfo) },
  };
}
