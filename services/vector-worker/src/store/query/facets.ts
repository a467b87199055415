/**
 * `POST /collections/{c}/facet`: how many points hold each value of a payload key, like Qdrant's
 * facet over a keyword, integer, uuid or bool index. A point counts once per distinct value it
 * holds (an array contributes each element); only values of the index's type count. Hits are
 * ordered by count (descending), then by value (ascending), and cut at `limit`. Counts are exact
 * (Qdrant's `exact: false` may approximate; an exact answer is a valid approximation).
 */
import type { QdrantFacetRequest, QdrantFacetResponse, QdrantFacetValue } from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type Db, type Fragment } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import { formatError } from '../errors.ts';
import { parseKeyPath, strictJsonPath } from '../filter/key-path.ts';
import { clampLimit } from '../points/reads.ts';
import { filterWhere } from '../filter/where.ts';

const FACET_TYPES = ['keyword', 'integer', 'uuid', 'bool'] as const;
type FacetType = (typeof FACET_TYPES)[number];

function indexType(schema: unknown): string | undefined {
  if (typeof schema === 'string') return schema;
  if (typeof schema === 'object' && schema !== null) return (schema as { type?: string }).type;
  return undefined;
}

/** Which JSON values of the key count for an index type (SQL over the element `e`). */
function valueTest(db: Db, t: FacetType, e: Fragment): Fragment {
  switch (t) {
    case 'keyword':
      return db`jsonb_typeof(${e}) = 'string'`;
    case 'integer':
      // Qdrant's integer index holds i64 values: a float such as 1.5 is not one.
      return db`jsonb_typeof(${e}) = 'number' and (${e})::numeric = trunc((${e})::numeric)`;
    case 'uuid':
      return db`jsonb_typeof(${e}) = 'string' and (${e} #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$'`;
    case 'bool':
      return db`jsonb_typeof(${e}) = 'boolean'`;
  }
}

export async function facet(db: Db, schema: string, meta: CollectionMeta, req: QdrantFacetRequest): Promise<QdrantFacetResponse> {
  const items = parseKeyPath(req.key);
  if (!items) throw formatError(`Invalid json path: '${req.key}'`);
  const t = indexType(meta.payloadIndexes.get(req.key));
  if (!t || !(FACET_TYPES as readonly string[]).includes(t)) {
    throw new QdrantError(
      400,
      `Bad request: Index required but not found for "${req.key}" of one of the following types: [keyword, integer, uuid, bool]. Help: Create an index for this key or use a different filter.`,
    );
  }
  const type = t as FacetType;
  const e = db`x.v`;
  // uuid values are counted in their canonical form (lower case, hyphenated), as Qdrant stores them.
  const value = type === 'uuid' ? db`to_jsonb(((${e} #>> '{}')::uuid)::text)` : e;
  const rows = await db<{ v: QdrantFacetValue; n: string }[]>`
    select v, count(*)::text as n from (
      select distinct p.pid, ${value} as v
      from ${tableOf(db, schema, meta)} p
      cross join lateral jsonb_path_query(p.payload, ${strictJsonPath(items)}::text::jsonpath, '{}'::jsonb, true) as r(v)
      cross join lateral jsonb_array_elements(case when jsonb_typeof(r.v) = 'array' then r.v else jsonb_build_array(r.v) end) as x(v)
      where ${filterWhere(db, meta, req.filter)} and ${valueTest(db, type, e)}
    ) d
    group by v
    order by count(*) desc,
      case when jsonb_typeof(v) = 'number' then (v)::numeric end,
      (v #>> '{}') collate "C"
    limit ${clampLimit(req.limit)}`;
  return { hits: rows.map((r) => ({ value: r.v, count: Number(r.n) })) };
}
