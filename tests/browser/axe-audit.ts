import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/**
 * axe-core on the page as it is now (as a11y.test.ts runs it): every violation printed, the
 * serious and critical ones returned (a test expects none). `within`: selectors of the screen under
 * test (a dialog, the page's main area) when the rest — the sidebar, the top bar — is another
 * screen's, audited by a11y.test.ts; empty: the whole document.
 */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

export async function axeAudit(page: Page, screen: string, within: string[] = []): Promise<string[]> {
  // Colours are measured as painted: let fade-ins (the modal's) finish first.
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity));
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(async (only) => {
    const axe = (window as unknown as { axe: { run(ctx: Document | object, opts: object): Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run(only.length ? { include: only.map((s) => [s]) } : document, { resultTypes: ['violations'] })).violations;
  }, within)) as Violation[];
  const lines = violations.map(
    (v) => `[${screen}] ${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => `${n.target.join(' ')}${n.failureSummary ? ` (${n.failureSummary.replace(/\s+/g, ' ')})` : ''}`).join('; ')}`,
  );
  for (const l of lines) console.log(l);
  return lines.filter((_, i) => violations[i]!.impact === 'serious' || violations[i]!.impact === 'critical');
}
