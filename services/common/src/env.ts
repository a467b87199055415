import { z } from 'zod';

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

/** Unset or empty: the default; anything else must be a whole number in range. */
const whole = (min: number, max: number) =>
  z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(min).max(max).optional());
/** Unset or blank: undefined (the standard OpenTelemetry variables treat a blank one as unset). */
const trimmed = z.preprocess((v) => (typeof v === 'string' ? v.trim() || undefined : v), z.string().optional());

/**
 * The variables @gatehouse/common reads for every process (the bus, logs, metrics, traces): the
 * one schema for them, so that no module of the library reads `process.env` itself. Each
 * process's own schema covers its own variables.
 */
export const CommonEnv = z.object({
  /** Namespace prefix of subjects, buckets and keys (test stacks share one NATS and Redis). */
  GATEHOUSE_NS: z.string().regex(/^[A-Za-z0-9_-]*$/, 'letters, digits, _ or -').default(''),
  /** pino's level: trace, debug, info, warn, error, fatal or silent. */
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).optional(),
  /** Give up on a worker that sent no sign of life for this long: 503 rather than waiting out a longer limit. */
  GATEHOUSE_BUS_SILENCE_MS: whole(1, 2 ** 31 - 1).transform((v) => v ?? 10_000),
  /** Serve Prometheus metrics on this port (unset: no listener) and address (default loopback). */
  METRICS_PORT: whole(1, 65535),
  METRICS_HOST: trimmed,
  /** The standard OpenTelemetry variables this code acts on; the exporter reads its own others. */
  OTEL_SDK_DISABLED: trimmed,
  OTEL_TRACES_EXPORTER: trimmed,
  OTEL_EXPORTER_OTLP_ENDPOINT: trimmed,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: trimmed,
  /** `service.name` of every span; each process names itself when unset. */
  OTEL_SERVICE_NAME: trimmed,
});
export type CommonEnv = z.infer<typeof CommonEnv>;

let common: CommonEnv | undefined;
/** CommonEnv of this process, parsed on first use (a bad value stops the process, naming it). */
export function commonEnv(): CommonEnv {
  return (common ??= parseEnv(CommonEnv));
}
