/**
 * WHERE fragments over a point table: Qdrant filters (compiled by filter-sql.ts) and point-id
 * selectors. Id lists use the `pid` primary key so lookups stay index scans.
 */
import type postgres from 'postgres';
import type { CollectionMeta, Db, Fragment } from '../collections/catalog.ts';
import { compileFilter } from './filter-sql.ts';
import { parsePointId, pidOf, type ParsedPointId } from '../points/ids.ts';
import { QdrantError } from '../errors.ts';

function isTextIndex(schema: unknown): boolean {
  return schema === 'text' || (typeof schema === 'object' && schema !== null && (schema as { type?: unknown }).type === 'text');
}

/** A Qdrant filter (absent or null → `true`). */
export function filterWhere(db: Db, meta: CollectionMeta, filter: unknown): Fragment {
  return compileFilter(db as postgres.Sql, filter ?? null, {
    vectorColumns: Object.fromEntries([...meta.dense.values()].map((d) => [d.name, d.column])),
    sparseVectors: [...meta.sparse],
    textIndexed: (key: string) => isTextIndex(meta.payloadIndexes.get(key)),
    textIndex: (key: string) => {
      const schema = meta.payloadIndexes.get(key);
      if (!isTextIndex(schema)) return undefined;
      return typeof schema === 'object' && schema !== null ? (schema as Record<string, unknown>) : {};
    },
  });
}

export function parseIds(ids: readonly unknown[]): ParsedPointId[] {
  return ids.map((id) => parsePointId(id));
}

export function pidIn(db: Db, ids: readonly ParsedPointId[]): Fragment {
  return db`pid = any(${[...new Set(ids.map(pidOf))]}::text[])`;
}

/** `{points: [...]}` or `{filter}`. */
export function selectorWhere(db: Db, meta: CollectionMeta, sel: { points?: unknown[]; filter?: unknown }): Fragment {
  if (sel.points !== undefined) return pidIn(db, parseIds(sel.points));
  return filterWhere(db, meta, sel.filter);
}

export const pointNotFound = (id: ParsedPointId) => new QdrantError(404, `Not found: No point with id ${pidOf(id)} found`);

/** Qdrant's payload and vector updates by id fail on the first id that does not exist. */
export async function requireExisting(db: Db, table: Fragment, ids: readonly ParsedPointId[]): Promise<void> {
  if (ids.length === 0) return;
  const rows = await db<{ pid: string }[]>`select pid from ${table} where ${pidIn(db, ids)}`;
  const found = new Set(rows.map((r) => r.pid));
  const missing = ids.find((id) => !found.has(pidOf(id)));
  if (missing) throw pointNotFound(missing);
}
