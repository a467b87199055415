import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { grantReaches, type AccessGrantRow } from './access.ts';
import { fail, type Tx, type UserRow } from './context.ts';
import { existingIds } from './folders/folders.store.ts';

/**
 * Open WebUI's access grants on one kind of workspace resource (prompts, custom models): the
 * access_grant rows with that `resource_type`, read and replaced the same way for every kind.
 * Owners and admins are the caller's to check; these answer what a grant gives.
 */
type Db = Sql | Tx;
const q = (db: Db) => db as Sql;

export type Grant = { principal_type: 'user' | 'group'; principal_id: string; permission: 'read' | 'write' };

export function resourceGrants(resourceType: 'prompt' | 'model') {
  /** SQL fragment: the ids `user` may read (`write`: may change) by a grant. */
  const reachable = (db: Db, user: UserRow, permission: 'read' | 'write') => {
    const sql = q(db);
    // A write grant includes read (Open WebUI's sharing dialog always stores both).
    const perms = permission === 'write' ? ['write'] : ['read', 'write'];
    return sql`select g.resource_id from access_grant g
      where g.resource_type = ${resourceType} and g.permission in ${sql(perms)} and ${grantReaches(sql, user.id)}`;
  };

  return {
    reachable,

    /** Whether `user` holds a grant of at least `permission` on `id`. */
    async granted(db: Db, user: UserRow, id: string, permission: 'read' | 'write'): Promise<boolean> {
      const sql = q(db);
      return (await sql`select 1 from (${reachable(db, user, permission)}) r where r.resource_id = ${id} limit 1`).length > 0;
    },

    /** Of these ids, those `user` may change by a grant. */
    async writableByGrant(db: Db, user: UserRow, ids: readonly string[]): Promise<Set<string>> {
      if (!ids.length) return new Set();
      const sql = q(db);
      const rows = await sql<{ resource_id: string }[]>`select r.resource_id from (${reachable(db, user, 'write')}) r
        where r.resource_id = any(${sql.array([...ids])}::text[])`;
      return new Set(rows.map((r) => r.resource_id));
    },

    async grantsOf(db: Db, ids: readonly string[]): Promise<Map<string, AccessGrantRow[]>> {
      const out = new Map<string, AccessGrantRow[]>();
      if (!ids.length) return out;
      const sql = q(db);
      const rows = await sql<AccessGrantRow[]>`
        select id, resource_type, resource_id, principal_type, principal_id, permission, created_at from access_grant
        where resource_type = ${resourceType} and resource_id = any(${sql.array([...ids])}::text[])
        order by created_at, principal_type, principal_id, permission`;
      for (const g of rows) {
        const list = out.get(g.resource_id) ?? [];
        list.push({ ...g, created_at: Number(g.created_at) });
        out.set(g.resource_id, list);
      }
      return out;
    },

    /** The resource's grants become exactly these (deduplicated by cleanGrants). */
    async replaceGrants(tx: Tx, id: string, grants: readonly Grant[], t: number): Promise<void> {
      await tx`delete from access_grant where resource_type = ${resourceType} and resource_id = ${id}`;
      for (const g of grants) {
        await tx`insert into access_grant (id, resource_type, resource_id, principal_type, principal_id, permission, created_at)
          values (${randomUUID()}, ${resourceType}, ${id}, ${g.principal_type}, ${g.principal_id}, ${g.permission}, ${t})`;
      }
    },
  };
}

/** One row per (principal, permission); a user or group that does not exist is the caller's 400. */
export async function cleanGrants(tx: Tx, grants: readonly Grant[]): Promise<Grant[]> {
  if (grants.some((g) => g.principal_type === 'group' && g.principal_id === '*')) fail(400, 'The everyone grant is principal_type "user" with principal_id "*"');
  const seen = new Set<string>();
  const out = grants.filter((g) => {
    const k = `${g.principal_type}\u0001${g.principal_id}\u0001${g.permission}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  for (const table of ['user', 'group'] as const) {
    const ids = [...new Set(out.filter((g) => g.principal_type === table && g.principal_id !== '*').map((g) => g.principal_id))];
    if (!ids.length) continue;
    const known = await existingIds(tx, table, ids);
    const unknown = ids.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown ${table} in access_grants: ${unknown}`);
  }
  return out;
}
