import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Secret scan of the tree: secretlint's recommended rules (cloud and SaaS keys, private keys,
 * credentials in URLs, OpenAI/Anthropic/GitHub/Slack/npm tokens…) over every file git tracks.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const secretlint = join(root, 'node_modules', '.bin', 'secretlint');
const config = join(root, '.secretlintrc.json');

interface Result {
  filePath: string;
  messages: Array<{ ruleId: string; message: string; loc?: { start: { line: number } } }>;
}

async function scan(files: string[], cwd = root): Promise<Result[]> {
  // The report goes to a file: piped, a large one is cut off when secretlint exits. It exits 1
  // when it finds something, 0 when not; anything else is a failure of the scan itself.
  const report = join(mkdtempSync(join(tmpdir(), 'gatehouse-secretlint-')), 'report.json');
  try {
    await run(secretlint, ['--format', 'json', '--no-glob', '--secretlintrc', config, '--output', report, ...files], { cwd, maxBuffer: 64 * 1024 * 1024 }).catch(
      (err: { code?: number }) => {
        if (err.code !== 1) throw err;
      },
    );
    return JSON.parse(readFileSync(report, 'utf8')) as Result[];
  } finally {
    rmSync(dirname(report), { recursive: true, force: true });
  }
}

describe('secret scan of the tree', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'gatehouse-secret-scan-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('finds a private key planted in a scratch file (the scanner can fail)', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const file = join(tmp, 'planted.txt');
    writeFileSync(file, `config:\n${privateKey}`);
    const [result] = await scan(['planted.txt'], tmp);
    expect(result!.messages.map((m) => m.ruleId)).toContain('@secretlint/secretlint-rule-privatekey');
  });

  it('no tracked file holds a secret', async () => {
    const { stdout } = await run('git', ['ls-files', '-z'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const files = stdout.split('\0').filter(Boolean);
    expect(files.length).toBeGreaterThan(100);
    const results = await scan(files);
    const found = results.flatMap((r) => r.messages.map((m) => `${r.filePath.slice(root.length + 1)}:${m.loc?.start.line ?? '?'} ${m.ruleId}`));
    console.log(`[secret-scan] ${results.length} files scanned, ${found.length} findings`);
    expect(found).toEqual([]);
  }, 120_000);
});
