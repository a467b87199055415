import { z } from 'zod';
import { LEXICAL_HASH_MODEL } from '@gatehouse/common';

export const DEFAULT_VECTORDB_URL = 'http://127.0.0.1:6333';
export const DEFAULT_SEARCH_LIMIT = 10;

export const DEFAULT_TOOL_STORE_DESCRIPTION =
  'Keep the memory for later use, when you are asked to remember something.';
export const DEFAULT_TOOL_FIND_DESCRIPTION =
  'Look up memories in Qdrant. Use this tool when you need to: \n' +
  ' - Find memories by their content \n' +
  ' - Access memories for further analysis \n' +
  ' - Get some personal information about the user';

export type EmbeddingConfig =
  | { provider: 'local'; model: string; vectorName?: string }
  | { provider: 'openai'; model: string; baseUrl: string; apiKey?: string; vectorName?: string };

export interface Config {
  vectordbUrl: string;
  /** Sent as `api-key` on every request. Non-enumerable, so logging or serialising a config never shows it. */
  readonly vectordbApiKey: string;
  collection: string | undefined;
  searchLimit: number;
  readOnly: boolean;
  embedding: EmbeddingConfig;
  toolStoreDescription: string;
  toolFindDescription: string;
}

// Empty and whitespace-only values mean "not set", as in a compose file's `VAR=` line.
const blankToUndefined = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());
const withDefault = <T extends z.ZodType>(schema: T, value: z.output<T>) =>
  z.preprocess(blankToUndefined, schema.default(value as never));

// Header values may not contain control characters; fetch would refuse them on the first request.
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;

/** Qdrant's collection-name rule: 1..255 characters, none of < > : " / \ | ? * NUL or U+001F. */
export const COLLECTION_NAME = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^<>:"/\\|?*\u0000\u001f]+$/, 'must not contain < > : " / \\ | ? * or control characters');

const httpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
  .transform((u) => u.replace(/\/+$/, ''));

const booleanFlag = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' }))
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const envSchema = z
  .object({
    VECTORDB_API_KEY: z
      .string({ error: 'VECTORDB_API_KEY is required: the key the vector store expects in the api-key header' })
      .trim()
      .min(1, 'VECTORDB_API_KEY is empty: set it to the key the vector store expects in the api-key header')
      .regex(NO_CONTROL, 'must not contain control characters'),
    VECTORDB_URL: withDefault(httpUrl, DEFAULT_VECTORDB_URL),
    VECTORDB_COLLECTION: optional(z.string().trim().pipe(COLLECTION_NAME)),
    VECTORDB_SEARCH_LIMIT: withDefault(
      z
        .string()
        .trim()
        .regex(/^\d+$/, 'must be a whole number')
        .transform(Number)
        .pipe(z.number().int().min(1).max(10_000)),
      DEFAULT_SEARCH_LIMIT,
    ),
    VECTORDB_READ_ONLY: withDefault(booleanFlag, false),
    EMBEDDING_PROVIDER: withDefault(z.enum(['local', 'openai'], { error: 'must be "local" or "openai"' }), 'local'),
    EMBEDDING_MODEL: optional(z.string().trim()),
    EMBEDDING_BASE_URL: optional(httpUrl),
    EMBEDDING_API_KEY: optional(z.string().trim().regex(NO_CONTROL, 'must not contain control characters')),
    EMBEDDING_VECTOR_NAME: optional(z.string().trim().max(255)),
    TOOL_STORE_DESCRIPTION: optional(z.string()),
    TOOL_FIND_DESCRIPTION: optional(z.string()),
  })
  .superRefine((env, ctx) => {
    if (env.EMBEDDING_PROVIDER === 'local') {
      if (env.EMBEDDING_MODEL !== undefined && env.EMBEDDING_MODEL !== LEXICAL_HASH_MODEL) {
        ctx.addIssue({
          code: 'custom',
          path: ['EMBEDDING_MODEL'],
          message:
            `the local provider has one model, "${LEXICAL_HASH_MODEL}" (got "${env.EMBEDDING_MODEL}"); ` +
            'to use another model, set EMBEDDING_PROVIDER=openai with EMBEDDING_BASE_URL',
        });
      }
      return;
    }
    if (!env.EMBEDDING_BASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['EMBEDDING_BASE_URL'],
        message: 'required when EMBEDDING_PROVIDER=openai (an OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1)',
      });
    }
    if (!env.EMBEDDING_MODEL) {
      ctx.addIssue({
        code: 'custom',
        path: ['EMBEDDING_MODEL'],
        message: 'required when EMBEDDING_PROVIDER=openai (the model name the endpoint serves)',
      });
    }
  });

export type ConfigResult = { ok: true; config: Config } | { ok: false; errors: string[] };

/** Validates the environment. Never throws; errors name the variable. */
export function parseConfig(env: NodeJS.ProcessEnv): ConfigResult {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? '(environment)');
      // zod's own messages ("Invalid input") do not say which variable; ours sometimes already do.
      return issue.message.startsWith(variable) ? issue.message : `${variable}: ${issue.message}`;
    });
    return { ok: false, errors };
  }
  const e = parsed.data;
  const embedding: EmbeddingConfig =
    e.EMBEDDING_PROVIDER === 'local'
      ? { provider: 'local', model: LEXICAL_HASH_MODEL }
      : { provider: 'openai', model: e.EMBEDDING_MODEL!, baseUrl: e.EMBEDDING_BASE_URL! };
  if (e.EMBEDDING_VECTOR_NAME) embedding.vectorName = e.EMBEDDING_VECTOR_NAME;
  if (embedding.provider === 'openai' && e.EMBEDDING_API_KEY) {
    Object.defineProperty(embedding, 'apiKey', { value: e.EMBEDDING_API_KEY, enumerable: false });
  }

  const config = {
    vectordbUrl: e.VECTORDB_URL,
    collection: e.VECTORDB_COLLECTION,
    searchLimit: e.VECTORDB_SEARCH_LIMIT,
    readOnly: e.VECTORDB_READ_ONLY,
    embedding,
    toolStoreDescription: e.TOOL_STORE_DESCRIPTION ?? DEFAULT_TOOL_STORE_DESCRIPTION,
    toolFindDescription: e.TOOL_FIND_DESCRIPTION ?? DEFAULT_TOOL_FIND_DESCRIPTION,
  } as Config;
  Object.defineProperty(config, 'vectordbApiKey', { value: e.VECTORDB_API_KEY, enumerable: false });
  return { ok: true, config };
}
