import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConformance, startVectorStack } from '../../scripts/src/vector-conformance.ts';
import type { Stack } from '../support/local-stack.ts';

/**
 * Qdrant's own HTTP API test suite (pytest, ../shared/conformance/qdrant) against the vector face
 * of this checkout: one run in a private vector-only stack, then one test here per suite file. A
 * suite file passes when every test of it that fails is on the known-failures list in
 * docs/vector-store.md (each with its reason) — so a regression, or a new failure nobody
 * explained, turns this red. The whole suite must also pass at ≥ 95 % (the bar docs/vector-store.md sets).
 */
const root = join(import.meta.dirname, '..', '..');
const DOC = join(root, 'docs', 'vector-store.md');
const BAR = 0.95;

/** `openapi/test_x.py::test_y[param]` ids the doc lists under "Known failures" (backticked). */
function knownFailures(doc: string): string[] {
  const start = doc.indexOf('### Known failures');
  if (start < 0) return [];
  const section = doc.slice(start).split(/\n#{2,3} /)[0]!;
  return [...section.matchAll(/`(openapi\/test_[a-z0-9_]+\.py(?:::[^`\s]+)?)`/g)].map((m) => m[1]!);
}

/** An entry covers a test id exactly, every parametrisation of a test, or a whole file. */
const covers = (entry: string, id: string) =>
  id === entry || id.startsWith(`${entry}[`) || (entry.endsWith('.py') && id.startsWith(`${entry}::`));

type Outcome = { passed: number; failed: string[]; files: Map<string, string[]>; output: string };

/** Parse pytest's `-rfE` short summary (`FAILED id - why`, `ERROR id - why`) and its counts. */
function parse(output: string): Outcome {
  const failed = new Set<string>();
  for (const m of output.matchAll(/^(?:FAILED|ERROR) (openapi\/\S+?)(?: - .*)?$/gm)) failed.add(m[1]!);
  const passed = Number(/(\d+) passed, \d+ failed\s*$/.exec(output.trimEnd())?.[1] ?? NaN);
  const files = new Map<string, string[]>();
  for (const id of failed) {
    const file = id.split('::')[0]!;
    files.set(file, [...(files.get(file) ?? []), id]);
  }
  return { passed, failed: [...failed], files, output };
}

let stack: Stack;
let outcome: Outcome;
// The suite's files, listed before the run so each gets its own test even if the run fails early.
const suiteDir = join(process.env.GATEHOUSE_QDRANT_CONFORMANCE ?? join(root, '..', 'shared', 'conformance', 'qdrant'), 'suite', 'tests', 'openapi');
const IGNORED = ['test_cluster.py', 'test_shard_snapshot.py', 'test_snapshot.py', 'test_group.py', 'test_stopwords.py'];
let suiteFiles: string[] = [];
try {
  const { readdirSync } = await import('node:fs');
  suiteFiles = readdirSync(suiteDir).filter((f) => /^test_.*\.py$/.test(f) && !IGNORED.includes(f)).sort();
} catch {
  suiteFiles = [];
}

beforeAll(async () => {
  const started = await startVectorStack();
  stack = started.stack;
  outcome = parse((await runConformance(started.url, ['-rfE', 'openapi'], false)).output);
}, 20 * 60_000);
afterAll(() => stack?.close());

describe("Qdrant's own HTTP API suite", () => {
  it('is present (the kit sits beside the checkout, as CI lays shared/ out)', () => {
    expect(suiteFiles.length, `no Qdrant suite at ${suiteDir}: set GATEHOUSE_QDRANT_CONFORMANCE`).toBeGreaterThan(50);
  });

  it(`passes at ≥ ${BAR * 100} %`, () => {
    const total = outcome.passed + outcome.failed.length;
    expect(Number.isFinite(outcome.passed), `no summary line from the runner:\n${outcome.output.slice(-3000)}`).toBe(true);
    expect(outcome.passed / total, `${outcome.passed} passed of ${total}`).toBeGreaterThanOrEqual(BAR);
  });

  const known = knownFailures(readFileSync(DOC, 'utf8'));
  it.each(suiteFiles)('%s: every failure is a known one', (file) => {
    const failing = outcome.files.get(`openapi/${file}`) ?? [];
    const unexplained = failing.filter((id) => !known.some((k) => covers(k, id)));
    expect(unexplained, 'failing and not listed under "Known failures" in docs/vector-store.md').toEqual([]);
  });
});
