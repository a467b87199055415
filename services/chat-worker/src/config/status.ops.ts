import type { ConfigStore } from '@gatehouse/common';
import { ok, opTable } from '../context.ts';

/**
 * `GET /api/v1/configs/status`: which revision of each setting group every live replica runs,
 * read from the config bucket's presence records (each replica writes its own after every applied
 * revision and every 5 s; a stopped one drops out within 15 s).
 */
export function configStatusOps(store: ConfigStore) {
  return opTable({
    'configs.status': async () => {
      const replicas = await store.listPresence();
      const names = new Set(replicas.flatMap((r) => Object.keys(r.applied)));
      const groups: Record<string, { revision: number; digest: string; at: string; by: string }> = {};
      for (const g of [...names].sort()) {
        const rec = await store.get(g);
        if (rec) groups[g] = { revision: rec.revision, digest: rec.envelope.digest, at: rec.envelope.at, by: rec.envelope.by };
      }
      return ok({
        groups,
        replicas: replicas
          .sort((a, b) => a.service.localeCompare(b.service) || a.instance.localeCompare(b.instance))
          .map((r) => ({
            instance: r.instance,
            service: r.service,
            host: r.host,
            pid: r.pid,
            started_at: r.startedAt,
            heartbeat_at: r.heartbeatAt,
            applied: r.applied,
            in_step: Object.entries(r.applied).every(([g, a]) => a.revision === (groups[g]?.revision ?? 0)),
          })),
      });
    },
  });
}
