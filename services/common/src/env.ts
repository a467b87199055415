import type { z } from 'zod';

/**
 * Parse the process environment once at start-up. A bad value stops the process with a message
 * naming the variable, instead of failing later somewhere less obvious.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
  process.stderr.write(`Invalid configuration:\n${lines.join('\n')}\n`);
  process.exit(1);
}

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/gatehouse';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
