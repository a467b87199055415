import { LiveConfig, type Logger } from '@gatehouse/common';
import type { ProxyConfig } from '../upstream/config.ts';
import { parseRouting, type Routing } from './config.ts';

/** The config bucket's key for the LLM proxy's routing table. */
export const ROUTING_GROUP = 'llm.routing';

/**
 * The routing table this proxy worker runs: LLMPROXY_CONFIG's `routing` section until a value is
 * stored in the config bucket (group `llm.routing`, the same format), then each stored revision,
 * applied live. A value naming a provider this worker does not have is rejected (logged once) and
 * the running table stays; the providers themselves come from the file.
 */
export function liveRouting(config: ProxyConfig, log: Logger): LiveConfig<Routing> {
  const providers = new Set(Object.keys(config.providers));
  return new LiveConfig<Routing>({
    group: ROUTING_GROUP,
    parse: (raw) => parseRouting(raw, providers),
    initial: config.routing,
    log,
  });
}
