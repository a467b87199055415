/**
 * Strict mode's rate limits: Qdrant's token bucket (`read_rate_limit` / `write_rate_limit` per
 * minute; capacity = the limit, refilled at limit/60 tokens a second, starting full), kept in
 * Postgres (`rate_buckets`, LAYOUT.md) so every worker replica draws from the same bucket. One
 * statement refills and takes under the row's lock, so concurrent requests cannot both spend the
 * last token.
 */
import type { CollectionMeta, Db } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';

export type RateKind = 'read' | 'write';

/** Qdrant's 429: `Rate limiting exceeded: …`, with the wait in seconds for `Retry-After`. */
export class RateLimitError extends QdrantError {
  constructor(
    message: string,
    public readonly retryAfter?: number,
  ) {
    super(429, `Rate limiting exceeded: ${message}`, retryAfter === undefined ? {} : { retry_after: retryAfter });
  }
}

/** Rust's `{:.1}` of an f64 (round half to even is irrelevant at this precision for display). */
const oneDecimal = (n: number) => (Math.round(n * 10) / 10).toFixed(1);

/**
 * Take `cost` tokens from the collection's `kind` bucket of `perMinute` capacity, or throw
 * Qdrant's 429. A request costing more than the capacity can never pass and says so.
 */
export async function consume(db: Db, schema: string, meta: CollectionMeta, kind: RateKind, perMinute: number, cost: number): Promise<void> {
  const label = kind === 'read' ? 'Read' : 'Write';
  if (cost > perMinute) {
    throw new RateLimitError(`${label} rate limit exceeded, request larger than rate limiter capacity, please try to split your request`);
  }
  const perSecond = perMinute / 60;
  const table = db`${db(schema)}.rate_buckets`;
  // First use starts a full bucket; a concurrent first use loses the insert and updates below.
  await db`
    insert into ${table} (collection_id, kind, tokens, updated_at)
    values (${meta.id}, ${kind}, ${perMinute}, clock_timestamp())
    on conflict do nothing`;
  const [row] = await db<{ available: number; ok: boolean }[]>`
    with cur as (
      select least(${perMinute}::float8,
                   tokens + ${perSecond}::float8 * extract(epoch from clock_timestamp() - updated_at)) as available
      from ${table} where collection_id = ${meta.id} and kind = ${kind} for update
    )
    update ${table} b
    set tokens = case when cur.available >= ${cost} then cur.available - ${cost} else cur.available end,
        updated_at = clock_timestamp()
    from cur
    where b.collection_id = ${meta.id} and b.kind = ${kind}
    returning cur.available::float8 as available, cur.available >= ${cost} as ok`;
  // The row vanishes only when strict mode changed concurrently: this request then passes.
  if (!row || row.ok) return;
  const wait = (cost - row.available) / perSecond;
  const retryAfter = Math.max(1, Math.ceil(wait));
  throw new RateLimitError(
    `${label} rate limit exceeded: Operation requires ${cost} tokens but only ${oneDecimal(row.available)} were available. Retry after ${retryAfter}s`,
    retryAfter,
  );
}

/** Strict mode changed: every bucket of the collection starts full again (Qdrant rebuilds them). */
export async function resetBuckets(db: Db, schema: string, collectionId: number): Promise<void> {
  await db`delete from ${db(schema)}.rate_buckets where collection_id = ${collectionId}`;
}
