import { describe, expect, it } from 'vitest';
import { cosine, fastembedStyleVectorName } from './embedding.ts';
import { evaluateEmbedder } from './embedding-eval.ts';
import { HARD_NEGATIVES, PARAPHRASE_PAIRS } from './embedding-eval-data.ts';
import { embedLexical, LEXICAL_HASH_DIMENSION, stem, tokenize } from '@gatehouse/common';
import { LexicalHashEmbedder } from './lexical-hash-embedder.ts';
import { createEmbedder } from './create-embedder.ts';

const norm = (v: number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('lexical-hash-v1', () => {
  const embedder = new LexicalHashEmbedder();

  it('has 384 dimensions and its own vector name', async () => {
    expect(embedder.dimension).toBe(384);
    expect(embedder.vectorName).toBe('lexical-hash-v1');
    const [v] = await embedder.embed(['hello world']);
    expect(v).toHaveLength(LEXICAL_HASH_DIMENSION);
  });

  it('is deterministic, in one call and across calls', async () => {
    const texts = ['The vector store listens on port 6333.', 'Maria has her birthday on the 14th of March.'];
    const a = await embedder.embed(texts);
    const b = await embedder.embed([...texts].reverse());
    expect(a[0]).toEqual(b[1]);
    expect(a[1]).toEqual(b[0]);
    expect(await embedder.embed([texts[0]!, texts[0]!])).toEqual([a[0], a[0]]);
  });

  it('does not change between versions (stored vectors depend on it)', () => {
    // If this fails, the embedding changed: give it a new name (lexical-hash-v2), do not update the numbers.
    const v = embedLexical('Hello, world! Résumé of the 2 cats.');
    const nonZero = v.flatMap((x, i) => (x !== 0 ? [i] : []));
    expect(nonZero.length).toBeGreaterThan(20);
    expect(nonZero.slice(0, 5)).toEqual(GOLDEN_INDICES);
    expect(GOLDEN_INDICES.map((i) => Number(v[i]!.toFixed(6)))).toEqual(GOLDEN_VALUES);
  });

  it('returns unit vectors, also for text with no words', async () => {
    const vs = await embedder.embed(['a', 'hello', 'A much longer sentence with many, many words in it.', '', '!!! ???', '日本語のテキスト']);
    for (const v of vs) {
      expect(v.every(Number.isFinite)).toBe(true);
      expect(norm(v)).toBeCloseTo(1, 12);
    }
    expect(vs[3]).toEqual(vs[4]); // both have no letters or digits
  });

  it('ignores case, accents and punctuation', () => {
    expect(embedLexical('Café RÉSUMÉ!')).toEqual(embedLexical('cafe resume'));
    expect(tokenize("Don't stop—it's 6333.")).toEqual(['dont', 'stop', 'its', '6333']);
    expect(['passwords', 'queries', 'running', 'stored', 'boxes', 'class', 'status'].map(stem)).toEqual([
      'password',
      'query',
      'runn',
      'stor',
      'box',
      'class',
      'status',
    ]);
  });

  it('scores every labelled paraphrase pair above its unrelated counterpart on average, and clearly', async () => {
    const r = await evaluateEmbedder(embedder);
    expect(r.pairs).toBe(PARAPHRASE_PAIRS.length);
    expect(PARAPHRASE_PAIRS.length).toBeGreaterThanOrEqual(20);
    expect(r.meanRelated).toBeGreaterThan(r.meanUnrelated + 0.3);
    expect(r.meanUnrelated).toBeLessThan(0.1);
    // The README's numbers: keep them in sync if the data set changes.
    expect(r.meanRelated).toBeCloseTo(0.415, 3);
    expect(r.meanUnrelated).toBeCloseTo(0.008, 3);
    expect(r.top1).toBeCloseTo(20 / 30, 6);
    expect(r.auc).toBeCloseTo(0.837, 3);
  });

  it('is lexical, not semantic: honest limits', async () => {
    const r = await evaluateEmbedder(embedder);
    // Shared words: every paraphrase is found first.
    expect(r.top1By.high).toBe(1);
    expect(r.top1By.some).toBe(1);
    // Synonyms only: near-zero similarity, no paraphrase found first.
    expect(r.meanRelatedBy.none).toBeLessThan(0.1);
    expect(r.top1By.none).toBe(0);
    // Same words, different meaning: looks nearly identical.
    expect(r.meanHardNegative).toBeGreaterThan(0.7);
    expect(HARD_NEGATIVES.length).toBeGreaterThan(0);
  });

  it('can be stored under another vector name with EMBEDDING_VECTOR_NAME', async () => {
    const renamed = createEmbedder({ provider: 'local', model: 'lexical-hash-v1', vectorName: 'notes' });
    expect(renamed.vectorName).toBe('notes');
    expect(renamed.dimension).toBe(384);
    expect(await renamed.embed(['x'])).toEqual([embedLexical('x')]);
  });
});

describe('helpers', () => {
  it('derives the vector name like mcp-server-qdrant', () => {
    expect(fastembedStyleVectorName('sentence-transformers/all-MiniLM-L6-v2')).toBe('fast-all-minilm-l6-v2');
    expect(fastembedStyleVectorName('nomic-embed-text')).toBe('fast-nomic-embed-text');
  });

  it('computes cosine', () => {
    expect(cosine([1, 0], [0, 1])).toBe(0);
    expect(cosine([1, 1], [2, 2])).toBeCloseTo(1, 12);
    expect(cosine([0, 0], [1, 1])).toBe(0);
    expect(() => cosine([1], [1, 2])).toThrow();
  });
});

// embedLexical('Hello, world! Résumé of the 2 cats.'): first five non-zero buckets and their values.
const GOLDEN_INDICES = [3, 33, 49, 58, 59];
const GOLDEN_VALUES = [-0.113684, -0.113684, -0.113684, -0.113684, -0.28421];
