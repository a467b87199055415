import { pino, type Logger } from 'pino';
import { commonEnv } from './env.ts';

/**
 * Every header or field that can carry a key is redacted, wherever a log line puts it: keys must
 * never reach a log (ARCHITECTURE "Gates").
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-proxy-key"]',
  'req.headers["api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["x-proxy-key"]',
  'headers["api-key"]',
  'key',
  'apiKey',
  'token',
];

export function createLogger(name: string, level: string = commonEnv().LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  });
}

export type { Logger };
