/**
 * The vector-scored query kinds of the query API — `nearest` (+ `mmr`), `recommend`, `discover`,
 * `context`, `relevance_feedback` — parsed from the request and run against one stage's target
 * vector (`using`), with example ids resolved through `lookup_from` (examples.ts).
 *
 * `nearest` and `recommend` with `average_vector` are one kNN search (search.ts, HNSW); the other
 * kinds are an exact scan by a score expression (scored.ts). MMR re-ranks the nearest candidates.
 */
import type { QdrantSearchParams, QdrantWithPayload } from '@gatehouse/contracts';
import { QdrantError } from '../errors.ts';
import {
  isPointIdInput,
  isSparseTarget,
  prepareExample,
  rawValues,
  Resolver,
  similarityOf,
  sourceOf,
  targetOf,
  type Ctx,
  type Example,
  type Target,
} from './examples.ts';
import type { ParsedPointId } from '../points/ids.ts';
import { contextSql, discoverSql, type Pair } from './discover.ts';
import { feedbackSql, type Coefficients, type FeedbackItem } from './feedback.ts';
import { averageQuery, averageSparse, bestScoreSql, sumScoresSql, type Strategy } from './recommend.ts';
import { topByScore, pidOfRow, type Ranked } from './scored.ts';
import { knnRows } from '../search/search.ts';
import { kindSimilarity, nearestRows as kindRows, resolveQueryVector, storedOf, vectorKindOf, type QueryVector } from '../vectors/kinds.ts';
import { mmrSelect } from './mmr.ts';
import { isDocument } from '../vectors/bm25.ts';
import type { DenseVector, Fragment } from '../collections/catalog.ts';
import { idfParams } from '../vectors/sparse.ts';
import { parseVectorText, type VectorSelection } from '../vectors/vectors.ts';
import type { PointRow } from '../points/records.ts';

export type Mmr = { diversity?: number; candidates_limit?: number };

export type VectorQuery =
  | { kind: 'nearest'; input: unknown; mmr?: Mmr }
  | { kind: 'recommend'; positive: unknown[]; negative: unknown[]; strategy: Strategy }
  | { kind: 'discover'; target: unknown; pairs: Pair<unknown>[] }
  | { kind: 'context'; pairs: Pair<unknown>[] }
  | { kind: 'feedback'; target: unknown; feedback: FeedbackItem<unknown>[]; coefficients: Coefficients };

/** The parts of a query stage a vector query reads. */
export type VectorStage = {
  using?: string;
  lookup_from?: unknown;
  params?: QdrantSearchParams;
  score_threshold?: number;
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `ContextInput`: one pair, a list of pairs, or null. */
function pairsOf(v: unknown): Pair<unknown>[] {
  if (v === null || v === undefined) return [];
  return (Array.isArray(v) ? v : [v]) as Pair<unknown>[];
}

/** The vector query a `QueryInterface` holds, or undefined for the other kinds. */
export function parseVectorQuery(q: unknown): VectorQuery | undefined {
  if (!isObject(q) || 'indices' in q || isDocument(q)) return { kind: 'nearest', input: q };
  if ('nearest' in q) {
    const mmr = q.mmr === undefined || q.mmr === null ? undefined : (q.mmr as Mmr);
    return { kind: 'nearest', input: q.nearest, ...(mmr ? { mmr } : {}) };
  }
  if ('recommend' in q) {
    const r = (q.recommend ?? {}) as { positive?: unknown[] | null; negative?: unknown[] | null; strategy?: Strategy | null };
    return { kind: 'recommend', positive: r.positive ?? [], negative: r.negative ?? [], strategy: r.strategy ?? 'average_vector' };
  }
  if ('discover' in q) {
    const d = q.discover as { target: unknown; context?: unknown };
    return { kind: 'discover', target: d.target, pairs: pairsOf(d.context) };
  }
  if ('context' in q) return { kind: 'context', pairs: pairsOf(q.context) };
  if ('relevance_feedback' in q) {
    const f = q.relevance_feedback as { target: unknown; feedback: FeedbackItem<unknown>[]; strategy: { naive: Coefficients } };
    return { kind: 'feedback', target: f.target, feedback: f.feedback, coefficients: f.strategy.naive };
  }
  return undefined;
}

/** Every example input of a vector query (ids among them are resolved in one read). */
export function inputsOf(vq: VectorQuery): unknown[] {
  switch (vq.kind) {
    case 'nearest':
      return [vq.input];
    case 'recommend':
      return [...vq.positive, ...vq.negative];
    case 'discover':
      return [vq.target, ...vq.pairs.flatMap((p) => [p.positive, p.negative])];
    case 'context':
      return vq.pairs.flatMap((p) => [p.positive, p.negative]);
    case 'feedback':
      return [vq.target, ...vq.feedback.map((f) => f.example)];
  }
}

/** The point ids a vector query references (left out of the results unless looked up elsewhere). */
export function referencedIds(vq: VectorQuery): unknown[] {
  return inputsOf(vq).filter(isPointIdInput);
}

/**
 * `page`: the columns of the answer (payload selector, vectors), read by the nearest search's own
 * statement when the stage's ranking is the answer (query.ts: a query without prefetches), so the
 * page needs no second read.
 */
type Run = { filter: unknown; take: number; restrict?: readonly ParsedPointId[]; page?: { withPayload: QdrantWithPayload; sel: VectorSelection } };

/** Run a vector query on a stage: its best `take` points (among `restrict` when given). */
export async function runVectorQuery(ctx: Ctx, stage: VectorStage, vq: VectorQuery, run: Run): Promise<Ranked[]> {
  const kind = vectorKindOf(ctx.meta, stage.using ?? '');
  // Sparse and multivector nearest queries (kinds.ts); `params.idf` is checked for every kind.
  if (vq.kind === 'nearest' && (kind !== 'dense' || (!vq.mmr && stage.params?.idf != null)) && (stage.lookup_from ?? null) === null) {
    const qv = await resolveQueryVector(ctx.sql, ctx.schema, ctx.meta, stage.using ?? '', vq.input, stage.params);
    if (vq.mmr) return kindMmr(ctx, stage, qv, vq.mmr, withoutPage(run));
    return ranked(await kindRows(ctx.sql, ctx.schema, ctx.meta, qv, nearestOptions(stage, run, { all: false, names: [] })), run);
  }
  const target = targetOf(ctx, stage.using);
  const resolver = new Resolver(ctx, await sourceOf(ctx, stage.using, stage.lookup_from));
  await resolver.load(inputsOf(vq));
  const prepared = (input: unknown): Example => prepareExample(target, resolver.required(input));
  const scan = (score: Fragment) =>
    topByScore(ctx, { target, score, filter: run.filter, take: run.take, threshold: stage.score_threshold, ...(run.restrict ? { restrict: run.restrict } : {}) });
  const sql = ctx.sql;
  switch (vq.kind) {
    case 'nearest': {
      const e = prepared(vq.input);
      if (vq.mmr) {
        if (isSparseTarget(target) || target.multi) {
          throw new QdrantError(400, `Bad request: MMR on ${isSparseTarget(target) ? 'sparse' : 'multi'} vectors is not supported by this store`);
        }
        return mmr(ctx, stage, target, e, vq.mmr, withoutPage(run));
      }
      return nearest(ctx, stage, queryVectorOf(ctx, stage, target, e), run);
    }
    case 'recommend': {
      // Ids whose point lacks the vector drop out (Qdrant's resolve_reco_reference).
      const present = (inputs: unknown[]) => inputs.map((i) => resolver.raw(i)).filter((v) => v !== null);
      const pos = present(vq.positive);
      const neg = present(vq.negative);
      if (vq.strategy === 'average_vector') {
        if (isSparseTarget(target)) {
          const avg = averageSparse(
            pos.map((v) => prepareExample(target, v).sparse!),
            neg.map((v) => prepareExample(target, v).sparse!),
          );
          return nearest(ctx, stage, queryVectorOf(ctx, stage, target, { values: [], sparse: avg }), run);
        }
        // A multivector has no average: `average_vector` scores like `sum_scores` (MaxSim sums).
        if (target.multi && pos.length === 0) {
          throw new QdrantError(400, 'Wrong input: Positive vectors should not be empty with `average` strategy');
        }
        if (!target.multi) {
          const q = averageQuery(
            pos.map((v) => rawValues(target, v)),
            neg.map((v) => rawValues(target, v)),
          );
          return nearest(ctx, stage, queryVectorOf(ctx, stage, target, prepareExample(target, q)), run);
        }
      }
      const p = pos.map((v) => prepareExample(target, v));
      const n = neg.map((v) => prepareExample(target, v));
      return scan(vq.strategy === 'best_score' ? bestScoreSql(sql, target, p, n) : sumScoresSql(sql, target, p, n));
    }
    case 'discover': {
      const pairs = vq.pairs.map((p) => ({ positive: prepared(p.positive), negative: prepared(p.negative) }));
      return scan(discoverSql(sql, target, prepared(vq.target), pairs));
    }
    case 'context': {
      const pairs = vq.pairs.map((p) => ({ positive: prepared(p.positive), negative: prepared(p.negative) }));
      return scan(contextSql(sql, target, pairs));
    }
    case 'feedback': {
      const items = vq.feedback.map((f) => ({ example: prepared(f.example), score: f.score }));
      return scan(feedbackSql(sql, target, prepared(vq.target), items, vq.coefficients));
    }
  }
}

/** A prepared example as the nearest search of its kind takes it (kinds.ts). */
function queryVectorOf(ctx: Ctx, stage: VectorStage, target: Target, e: Example): QueryVector {
  if (isSparseTarget(target)) {
    return { kind: 'sparse', name: target.name, query: e.sparse ?? { indices: [], values: [] }, idf: idfParams(ctx.meta, target.name, stage.params) };
  }
  if (target.multi) return { kind: 'multi', vector: target, query: e.multi ?? [] };
  return { kind: 'dense', vector: target, query: e.values };
}

/** MMR reads the candidates' vectors, not the page's columns: the page is read afterwards. */
function withoutPage(run: Run): Run {
  const { page: _page, ...rest } = run;
  return rest;
}

/** The ranked points of a nearest search, with their rows when they hold the page's columns. */
const ranked = (found: { row: PointRow; score: number }[], run: Run): Ranked[] =>
  found.map(({ row, score }) => (run.page ? { pid: pidOfRow(row), score, row } : { pid: pidOfRow(row), score }));

/** Options of a nearest search: `sel` the vectors the caller needs, or the page's columns (`run.page`). */
function nearestOptions(stage: VectorStage, run: Run, sel: VectorSelection) {
  return {
    filter: run.filter,
    exclude: [],
    limit: run.take,
    offset: 0,
    scoreThreshold: stage.score_threshold,
    withPayload: run.page?.withPayload ?? false,
    sel: run.page?.sel ?? sel,
    params: stage.params,
    ...(run.restrict ? { restrict: run.restrict } : {}),
  };
}

/**
 * MMR on a sparse or multivector nearest query: the `candidates_limit` nearest points with their
 * vectors, compared with each other by the kind's similarity (kinds.ts kindSimilarity), selected
 * by mmr.ts. Points keep their nearest score, as in the dense MMR below.
 */
async function kindMmr(ctx: Ctx, stage: VectorStage, qv: QueryVector, m: Mmr, run: Run): Promise<Ranked[]> {
  const lambda = 1 - (m.diversity ?? 0.5); // 0 ≤ diversity ≤ 1 checked by the contract
  const sel = { all: false, names: [stage.using ?? ''] };
  const found = await kindRows(ctx.sql, ctx.schema, ctx.meta, qv, nearestOptions(stage, { ...run, take: m.candidates_limit ?? run.take }, sel));
  if (found.length < 2) return found.slice(0, run.take).map(({ row, score }) => ({ pid: pidOfRow(row), score }));
  const vs = found.map(({ row }) => storedOf(qv, row));
  const relevance = vs.map((v) => kindSimilarity(qv, qv.query, v));
  const selected = mmrSelect(relevance, (i, j) => kindSimilarity(qv, vs[i]!, vs[j]!), run.take, lambda);
  return selected.map((i) => ({ pid: pidOfRow(found[i]!.row), score: found[i]!.score }));
}

async function nearest(ctx: Ctx, stage: VectorStage, qv: QueryVector, run: Run): Promise<Ranked[]> {
  return ranked(await kindRows(ctx.sql, ctx.schema, ctx.meta, qv, nearestOptions(stage, run, { all: false, names: [] })), run);
}

/**
 * Maximal marginal relevance (Qdrant's mmr.rs): from the `candidates_limit` nearest points
 * (default: the stage's limit), take the most relevant first, then repeatedly the candidate with
 * the best λ·sim(query) − (1−λ)·max sim(selected), λ = 1 − diversity (default 0.5). Points keep
 * their nearest-search score; only the order changes.
 */
async function mmr(ctx: Ctx, stage: VectorStage, target: DenseVector, e: Example, m: Mmr, run: Run): Promise<Ranked[]> {
  // The contract checked 0 ≤ diversity ≤ 1 (Qdrant's validator).
  const lambda = 1 - (m.diversity ?? 0.5);
  const found = await knnRows(ctx.sql, ctx.schema, ctx.meta, {
    ...nearestOptions(stage, { ...run, take: m.candidates_limit ?? run.take }, { all: false, names: [target.name] }),
    vector: target,
    query: e.values,
  });
  const cands = found.map(({ row, score }) => ({ pid: pidOfRow(row), score, v: parseVectorText(row[target.column] as string) as number[] }));
  if (cands.length < 2) return cands.map(({ pid, score }) => ({ pid, score })).slice(0, run.take);
  const relevance = cands.map((c) => similarityOf(target, e.values, c.v));
  const selected = mmrSelect(relevance, (i, j) => similarityOf(target, cands[i]!.v, cands[j]!.v), run.take, lambda);
  return selected.map((i) => ({ pid: cands[i]!.pid, score: cands[i]!.score }));
}
