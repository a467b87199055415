import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest, keyFingerprint } from '@gatehouse/common';
import { rawRequest } from '../../scripts/src/probe.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/** The operator CLI as an operator runs it: scripts/gate, a real process, real edges. */
const stack = new Stack();
let edge: Edge;
const dir = mkdtempSync(join(tmpdir(), 'gate-cli-'));

beforeAll(async () => {
  await stack.startWorker();
  edge = await stack.startEdge();
});
afterAll(() => stack.close());

const gate = (args: string[], stdin?: string) => stack.gateCli(args, edge, stdin);

const models = async (key?: string) =>
  (await rawRequest(edge.url, '/v1/models', { headers: key ? { authorization: `Bearer ${key}` } : {} })).status;

describe('scripts/gate', () => {
  it('enforce --generate prints the new key once, on stdout only, and it works at once', async () => {
    const r = await gate(['enforce', 'speech', '--generate']);
    expect(r.code).toBe(0);
    const key = r.stdout.trim();
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.stdout).toBe(`${key}\n`);
    expect(r.stderr).not.toContain(key);
    expect(r.stderr).toMatch(/applied by 1 edge instance/);
    expect(await models()).toBe(401);
    expect(await models(key)).toBe(200);

    const status = await gate(['status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(keyFingerprint(keyDigest(key)));
    expect(status.stdout).not.toContain(key);
    expect(status.stdout).toMatch(/speech: enforced/);
    expect(status.stdout).toMatch(/applied revision/);
  });

  it('enforce --key-file reads the key from a file or standard input, never from arguments', async () => {
    const key = newKey();
    const file = join(dir, 'speech.key');
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
    expect((await gate(['enforce', 'speech', '--key-file', file])).code).toBe(0);
    expect(await models(key)).toBe(200);

    const key2 = newKey();
    expect((await gate(['enforce', 'speech', '--key-file', '-'], `${key2}\n`)).code).toBe(0);
    expect(await models(key2)).toBe(200);
    expect(await models(key)).toBe(401);
  });

  it('refuses short or empty keys and bad faces, changing nothing', async () => {
    const short = join(dir, 'short.key');
    writeFileSync(short, 'too-short');
    const r = await gate(['enforce', 'speech', '--key-file', short]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/at least 32/);
    expect(r.stderr).not.toContain('too-short');
    expect((await gate(['enforce', 'nope', '--generate'])).code).toBe(1);
    expect((await gate(['enforce', 'speech'])).code).toBe(1);
    expect(await models()).toBe(401);
  });

  it('verify passes when every face behaves as desired', async () => {
    const key = newKey();
    const file = join(dir, 'verify.key');
    writeFileSync(file, key);
    await gate(['enforce', 'speech', '--key-file', file]);
    const r = await gate(['verify', '--key-file', file]);
    expect(r.stdout).toMatch(/every face behaves/);
    expect(r.code).toBe(0);
    await gate(['open', 'speech']);
    const open = await gate(['verify']);
    expect(open.code).toBe(0);
  });

  it('verify fails when an edge does not behave as desired', async () => {
    const bus = await stack.busHandle();
    const kv = await bus.js.views.kv(bus.bucket('gatehouse_gates'));
    await kv.put('gate.speech', new TextEncoder().encode('not json'));
    const r = await gate(['verify']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/MISMATCH/);
    expect((await gate(['open', 'speech'])).code).toBe(0);
    expect(await models()).toBe(200);
  });
});
