import postgres, { type Sql } from 'postgres';

/**
 * A pool whose search_path is the chat schema, then public (pgvector's `vector` type lives
 * there). int8 columns (epoch seconds, counts) come back as numbers: they are far below 2^53,
 * and Open WebUI's JSON has them as numbers.
 */
export function openChatDb(url: string, schema: string, max: number): Sql {
  return postgres(url, {
    max,
    onnotice: () => undefined,
    connection: { search_path: `${schema}, public` },
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
  });
}

/** pgvector literal for a float array. */
export const vectorLiteral = (v: readonly number[]): string => `[${v.join(',')}]`;
