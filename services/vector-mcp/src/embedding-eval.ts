import { pathToFileURL } from 'node:url';
import { cosine, type Embedder } from './embedding.ts';
import { HARD_NEGATIVES, PARAPHRASE_PAIRS, type ParaphrasePair } from './embedding-eval-data.ts';

type Overlap = ParaphrasePair['overlap'];

export interface EmbeddingReport {
  pairs: number;
  /** Mean cosine of the paraphrase pairs, overall and by word-overlap level. */
  meanRelated: number;
  meanRelatedBy: Record<Overlap, number>;
  /** Mean cosine of query i with memory i+1 (same sentences, different meaning). */
  meanUnrelated: number;
  /** Share of (related, unrelated) pairs, over all combinations, where the related one scores higher (ROC AUC). */
  auc: number;
  /** Each query against all memories: share whose own memory ranks first, overall and by overlap level. */
  top1: number;
  top1By: Record<Overlap, number>;
  /** Mean reciprocal rank of the right memory. */
  mrr: number;
  meanHardNegative: number;
}

const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;

export async function evaluateEmbedder(embedder: Embedder): Promise<EmbeddingReport> {
  const pairs = PARAPHRASE_PAIRS;
  const n = pairs.length;
  const queries = await embedder.embed(pairs.map((p) => p.query));
  const memories = await embedder.embed(pairs.map((p) => p.memory));
  const q = (i: number): number[] => queries[i]!;
  const m = (i: number): number[] => memories[i]!;

  const related = pairs.map((_, i) => cosine(q(i), m(i)));
  const unrelated = pairs.map((_, i) => cosine(q(i), m((i + 1) % n)));

  let wins = 0;
  for (const r of related) for (const u of unrelated) wins += r > u ? 1 : r === u ? 0.5 : 0;

  const ranks = pairs.map((_, i) => {
    const own = cosine(q(i), m(i));
    let better = 0;
    for (let j = 0; j < n; j++) if (j !== i && cosine(q(i), m(j)) >= own) better++;
    return better + 1;
  });

  const levels: Overlap[] = ['high', 'some', 'none'];
  const by = (values: number[]): Record<Overlap, number> =>
    Object.fromEntries(levels.map((l) => [l, mean(values.filter((_, i) => pairs[i]!.overlap === l))])) as Record<
      Overlap,
      number
    >;

  const hard = await Promise.all(
    HARD_NEGATIVES.map(async ({ a, b }) => {
      const [va, vb] = await embedder.embed([a, b]);
      return cosine(va!, vb!);
    }),
  );

  const top1Flags = ranks.map((r) => (r === 1 ? 1 : 0));
  return {
    pairs: n,
    meanRelated: mean(related),
    meanRelatedBy: by(related),
    meanUnrelated: mean(unrelated),
    auc: wins / (n * n),
    top1: mean(top1Flags),
    top1By: by(top1Flags),
    mrr: mean(ranks.map((r) => 1 / r)),
    meanHardNegative: mean(hard),
  };
}

export function formatReport(name: string, r: EmbeddingReport): string {
  const f = (x: number): string => x.toFixed(3);
  const pct = (x: number): string => `${(x * 100).toFixed(0)}%`;
  return [
    `Embedding: ${name} — ${r.pairs} paraphrase pairs, ${r.pairs} unrelated pairs, ${HARD_NEGATIVES.length} hard negatives`,
    '',
    '| measure | all | high overlap | some overlap | no shared word |',
    '|---|---|---|---|---|',
    `| mean cosine, paraphrase pairs | ${f(r.meanRelated)} | ${f(r.meanRelatedBy.high)} | ${f(r.meanRelatedBy.some)} | ${f(r.meanRelatedBy.none)} |`,
    `| top-1 retrieval (query → ${r.pairs} memories) | ${pct(r.top1)} | ${pct(r.top1By.high)} | ${pct(r.top1By.some)} | ${pct(r.top1By.none)} |`,
    '',
    `mean cosine, unrelated pairs: ${f(r.meanUnrelated)}`,
    `mean cosine, hard negatives (same words, different meaning): ${f(r.meanHardNegative)}`,
    `ROC AUC paraphrase vs unrelated: ${f(r.auc)}; MRR: ${f(r.mrr)}`,
  ].join('\n');
}

// `pnpm --filter @gatehouse/vector-mcp eval:embedding` prints the table for the README.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { LexicalHashEmbedder } = await import('./lexical-hash-embedder.ts');
  const embedder = new LexicalHashEmbedder();
  process.stdout.write(`${formatReport(embedder.vectorName, await evaluateEmbedder(embedder))}\n`);
}
