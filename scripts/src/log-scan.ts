import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The test run's log audit ("no log line of the whole test run contains a key, a password
 * or a token"). Every service process the tests start (tests/support/local-stack.ts `Proc`) scans its
 * own output when it exits, against two kinds of evidence:
 *
 * - the secrets it was given (values of its environment variables whose names say key, secret,
 *   token or password) and the secrets the test process generated (`rememberSecret`: test keys,
 *   passwords), found verbatim;
 * - the shapes credentials have whatever their value: a JWT, an `sk-` API key, a Bearer
 *   credential, a password or key field with a value that is not the logger's `[redacted]`.
 *
 * The result (counts and where, never the value) goes to `GATEHOUSE_LOG_SCAN_DIR` as one JSON file
 * per process; the last test project (tests/security/log-audit.test.ts) fails on any finding.
 */

export interface LogFinding {
  /** What matched: `env:NAME`, `test-secret`, or a pattern's name. */
  kind: string;
  /** 1-based line of the process's output. */
  line: number;
  /** The line with every match masked, cut to 200 characters: enough to find the log call. */
  excerpt: string;
}

export interface LogScan {
  service: string;
  pid: number;
  lines: number;
  findings: LogFinding[];
}

const SECRET_ENV_NAME = /(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL)S?$|_KEYS$/i;
/** Shorter values ("1", "true", a port) would match everywhere and are not secrets. */
const MIN_SECRET_LENGTH = 8;

/** Shapes of credentials. A match of `[redacted]` (pino's censor) is what we want to see instead. */
const PATTERNS: Array<[string, RegExp]> = [
  ['jwt', /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g],
  ['sk-api-key', /\bsk-[A-Za-z0-9_-]{20,}/g],
  ['bearer', /\bBearer\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{16,}/gi],
  ['basic-auth-url', /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"]+:(?!\[redacted\])[^\s:/@"]{6,}@/gi],
  [
    'secret-field',
    /"(password|passwd|api_?key|x-api-key|x-proxy-key|api-key|authorization|secret|client_secret|token|access_token|refresh_token)"\s*:\s*"(?!\[redacted\]|")[^"]{8,}"/gi,
  ],
];

const testSecrets = new Set<string>();

/** A secret the test process made up (a key, a password): no service may ever log it. */
export function rememberSecret<T extends string>(value: T): T {
  if (value.length >= MIN_SECRET_LENGTH) testSecrets.add(value);
  return value;
}

export function secretsOfEnv(env: Record<string, string | undefined>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (!value || value.length < MIN_SECRET_LENGTH || !SECRET_ENV_NAME.test(name)) continue;
    // Lists (OPENAI_API_KEYS="a;b") hold one secret per item.
    for (const item of value.split(/[;,]/)) if (item.trim().length >= MIN_SECRET_LENGTH) out.push([name, item.trim()]);
  }
  return out;
}

export function scanLog(text: string, named: Array<[string, string]> = []): { lines: number; findings: LogFinding[] } {
  const findings: LogFinding[] = [];
  const lines = text.split('\n');
  const literal: Array<[string, string]> = [...named.map(([n, v]) => [`env:${n}`, v] as [string, string]), ...[...testSecrets].map((v) => ['test-secret', v] as [string, string])];
  lines.forEach((line, i) => {
    let masked = line;
    const kinds: string[] = [];
    for (const [kind, value] of literal) {
      if (masked.includes(value)) {
        kinds.push(kind);
        masked = masked.split(value).join('***');
      }
    }
    for (const [kind, re] of PATTERNS) {
      re.lastIndex = 0;
      if (re.test(masked)) {
        kinds.push(kind);
        masked = masked.replace(re, '***');
      }
    }
    for (const kind of kinds) findings.push({ kind, line: i + 1, excerpt: masked.slice(0, 200) });
  });
  return { lines: lines.length, findings };
}

/** Scan one process's output and leave the result where the audit test finds it (no-op outside a test run). */
export function recordLogScan(service: string, pid: number, text: string, env: Record<string, string | undefined>): void {
  const dir = process.env.GATEHOUSE_LOG_SCAN_DIR;
  if (!dir) return;
  const { lines, findings } = scanLog(text, secretsOfEnv(env));
  const scan: LogScan = { service, pid, lines, findings };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${service}-${pid}-${Date.now()}.json`), JSON.stringify(scan));
}
