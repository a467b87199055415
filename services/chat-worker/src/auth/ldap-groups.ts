import { randomUUID } from 'node:crypto';
import type { OpContext, Tx, UserRow } from '../context.ts';

/**
 * Group membership from a directory (Open WebUI 0.10.2's Groups.create_groups_by_group_names and
 * sync_groups_by_group_names, used by its LDAP sign-in): optionally create the groups that do not
 * exist yet, then make the user a member of exactly the groups with those names — removed from
 * the others, added to the named ones that exist. Runs inside the sign-in's transaction, with its
 * events. Names are matched exactly, as Open WebUI does. Each name is locked for the transaction
 * (advisory lock), so two sign-ins at once never create the same group twice.
 */
export async function syncGroupsByName(
  tx: Tx,
  ctx: Pick<OpContext, 'emit'>,
  user: UserRow,
  names: readonly string[],
  opts: { create: boolean },
  t: number,
): Promise<{ added: string[]; removed: string[]; created: string[] }> {
  const wanted = [...new Set(names)];
  const created: string[] = [];
  if (opts.create) {
    for (const name of [...wanted].sort()) {
      await tx`select pg_advisory_xact_lock(hashtext(${`gatehouse:group-name:${name}`}))`;
      const [exists] = await tx`select 1 from "group" where name = ${name} limit 1`;
      if (exists) continue;
      const id = randomUUID();
      // Open WebUI creates them with an empty description; ours also carry its default share setting.
      await tx`insert into "group" (id, user_id, name, description, data, meta, permissions, created_at, updated_at)
        values (${id}, ${user.id}, ${name}, '', ${tx.json({ config: { share: 'members' } })}, null, null, ${t}, ${t})`;
      await ctx.emit(tx, 'group.created', { actor: user, subject: { type: 'group', id }, source: 'ldap', data: { name } });
      created.push(id);
    }
  }
  const current = await tx<{ id: string; name: string }[]>`
    select g.id, g.name from "group" g join group_member m on m.group_id = g.id where m.user_id = ${user.id}`;
  const removed = current.filter((g) => !wanted.includes(g.name)).map((g) => g.id);
  if (removed.length) await tx`delete from group_member where user_id = ${user.id} and group_id in ${tx(removed)}`;
  const targets = wanted.length ? await tx<{ id: string }[]>`select id from "group" where name in ${tx(wanted)}` : [];
  const have = new Set(current.map((g) => g.id));
  const added = targets.map((g) => g.id).filter((id) => !have.has(id));
  for (const id of added) {
    await tx`insert into group_member (group_id, user_id, created_at) values (${id}, ${user.id}, ${t}) on conflict do nothing`;
  }
  for (const id of [...added, ...removed]) await tx`update "group" set updated_at = ${t} where id = ${id}`;
  for (const id of added) await ctx.emit(tx, 'group.member_added', { actor: user, subject: { type: 'group', id }, source: 'ldap', data: { user_ids: [user.id] } });
  for (const id of removed) await ctx.emit(tx, 'group.member_removed', { actor: user, subject: { type: 'group', id }, source: 'ldap', data: { user_ids: [user.id] } });
  return { added, removed, created };
}
