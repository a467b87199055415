/**
 * Collection aliases (LAYOUT.md `aliases`): another name under which a collection answers every
 * operation that loads it (catalog.ts `loadCollection` resolves the alias first, as Qdrant's
 * `resolve_name` does). `POST /collections/aliases` applies its actions in order, in one
 * transaction: all of them or none (Qdrant applies them one by one under a lock and keeps the ones
 * before a failing action). Deleting a collection drops its aliases (foreign key, on delete cascade).
 */
import type postgres from 'postgres';
import { QdrantChangeAliases, type QdrantAliasOperation, type QdrantAliasesResponse } from '@gatehouse/contracts';
import type { Db, Fragment } from './catalog.ts';
import { parseBody } from '../common.ts';
import { notFoundCollection, QdrantError } from '../errors.ts';

/** Every alias change and collection create serialises on this (transaction-level advisory lock). */
const ALIAS_LOCK = 0x616c6961; // "alia"

/** SQL condition on `collections` rows: the collection named `name`, or the one alias `name` points to. */
export function collectionByNameOrAlias(db: Db, schema: string, name: string): Fragment {
  return db`(name = ${name} or id = (select collection_id from ${db(schema)}.aliases where alias_name = ${name}))`;
}

/** The collection `name` stands for: the alias's target, else `name` itself (Qdrant's `resolve_name`). */
export async function resolveName(db: Db, schema: string, name: string): Promise<string> {
  const [row] = await db<{ name: string }[]>`
    select c.name from ${db(schema)}.aliases a join ${db(schema)}.collections c on c.id = a.collection_id where a.alias_name = ${name}`;
  return row?.name ?? name;
}

/** Qdrant refuses a collection named like an existing alias (400; StorageError::BadInput). */
export async function assertNotAnAlias(db: Db, schema: string, name: string): Promise<void> {
  await db`select pg_advisory_xact_lock(${ALIAS_LOCK})`;
  const [row] = await db`select 1 from ${db(schema)}.aliases where alias_name = ${name}`;
  if (row) throw new QdrantError(400, `Wrong input: Can't create collection with name ${name}. Alias with the same name already exists`);
}

export async function updateAliases(sql: postgres.Sql, schema: string, body: unknown): Promise<true> {
  const req = parseBody(QdrantChangeAliases, body);
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${ALIAS_LOCK})`;
    for (const action of req.actions as QdrantAliasOperation[]) {
      if ('create_alias' in action) {
        const { collection_name, alias_name } = action.create_alias;
        // Share-locked: a concurrent delete of the collection waits for this transaction.
        const [target] = await tx<{ id: number }[]>`select id from ${tx(schema)}.collections where name = ${collection_name} for share`;
        if (!target) throw notFoundCollection(collection_name);
        const [clash] = await tx`select 1 from ${tx(schema)}.collections where name = ${alias_name}`;
        if (clash) throw new QdrantError(409, `Wrong input: Collection \`${alias_name}\` already exists!`);
        // Qdrant's alias map is a plain insert: an existing alias of that name is repointed.
        await tx`
          insert into ${tx(schema)}.aliases (alias_name, collection_id) values (${alias_name}, ${target.id})
          on conflict (alias_name) do update set collection_id = excluded.collection_id`;
      } else if ('delete_alias' in action) {
        // Deleting an alias that does not exist is not an error in Qdrant.
        await tx`delete from ${tx(schema)}.aliases where alias_name = ${action.delete_alias.alias_name}`;
      } else {
        const { old_alias_name, new_alias_name } = action.rename_alias;
        const [old] = await tx<{ collection_id: number }[]>`
          delete from ${tx(schema)}.aliases where alias_name = ${old_alias_name} returning collection_id`;
        if (!old) throw new QdrantError(404, `Not found: Alias ${old_alias_name} does not exists!`);
        await tx`
          insert into ${tx(schema)}.aliases (alias_name, collection_id) values (${new_alias_name}, ${old.collection_id})
          on conflict (alias_name) do update set collection_id = excluded.collection_id`;
      }
    }
  });
  return true;
}

/** `GET /aliases`, or `GET /collections/{name}/aliases` (404 when the collection does not exist), sorted by alias. */
export async function listAliases(sql: postgres.Sql, schema: string, collection?: string): Promise<QdrantAliasesResponse> {
  if (collection !== undefined) {
    const [row] = await sql`select 1 from ${sql(schema)}.collections where ${collectionByNameOrAlias(sql, schema, collection)}`;
    if (!row) throw notFoundCollection(collection);
  }
  const rows = await sql<{ alias_name: string; collection_name: string }[]>`
    select a.alias_name, c.name as collection_name
    from ${sql(schema)}.aliases a join ${sql(schema)}.collections c on c.id = a.collection_id
    ${collection === undefined ? sql`` : sql`where c.id in (select id from ${sql(schema)}.collections where ${collectionByNameOrAlias(sql, schema, collection)})`}
    order by a.alias_name`;
  return { aliases: rows.map((r) => ({ alias_name: r.alias_name, collection_name: r.collection_name })) };
}
