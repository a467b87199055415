import postgres, { type Sql } from 'postgres';

/**
 * A pool whose search_path is the chat schema, then public (pgvector's `vector` type lives
 * there). int8 columns (epoch seconds, counts) come back as numbers: they are far below 2^53,
 * and Open WebUI's JSON has them as numbers.
 */
export function openChatDb(url: string, schema: string, max: number, opts: { genericPlans?: boolean } = {}): Sql {
  return postgres(url, {
    max,
    onnotice: () => undefined,
    connection: { search_path: `${schema}, public`, ...(opts.genericPlans ? { plan_cache_mode: 'force_generic_plan' } : {}) },
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
  });
}

/**
 * The pool knowledge searches run on (retrieval/search.ts): the same database, with every
 * prepared statement run on its generic plan. The hybrid statement is one text per k, so its
 * generic plan is made once per connection; a custom plan is made on every execution and
 * planning the statement cost about 2 ms, a third of the whole search on 100 000 chunks, for the
 * same rows (scripts/bench/knowledge.ts). What the scope's size decides is decided inside the
 * statement as it runs (search.ts), not by the planner.
 */
export const openSearchDb = (url: string, schema: string, max: number): Sql => openChatDb(url, schema, max, { genericPlans: true });

/** pgvector literal for a float array. */
export const vectorLiteral = (v: readonly number[]): string => `[${v.join(',')}]`;
