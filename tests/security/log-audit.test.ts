import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LogScan } from '../../scripts/src/log-scan.ts';

/**
 * The last project of the run: every service process the tests started has scanned its own output
 * for the secrets it was given, the secrets the tests made up, and the shapes of credentials
 * (scripts/src/log-scan.ts). No line may hold one.
 */
describe('log audit of the whole test run', () => {
  it('no service log line holds a key, a password or a token', () => {
    const dir = process.env.GATEHOUSE_LOG_SCAN_DIR;
    expect(dir, 'GATEHOUSE_LOG_SCAN_DIR is not set: run the suite with scripts/test (it sets it and clears the scans of earlier runs)').toBeTruthy();
    expect(existsSync(dir!), `${dir} does not exist: no service process recorded its log scan`).toBe(true);
    const scans = readdirSync(dir!)
      .filter((f) => f.endsWith('.json'))
      .map((f) => JSON.parse(readFileSync(join(dir!, f), 'utf8')) as LogScan);
    const lines = scans.reduce((n, s) => n + s.lines, 0);
    const findings = scans.flatMap((s) => s.findings.map((f) => `${s.service} (pid ${s.pid}) line ${f.line} [${f.kind}]: ${f.excerpt}`));
    const services = [...new Set(scans.map((s) => s.service))].sort();
    console.log(`[log-audit] ${scans.length} processes (${services.join(', ')}), ${lines} lines, ${findings.length} findings`);
    expect(scans.length).toBeGreaterThan(0);
    expect(findings).toEqual([]);
  });
});
