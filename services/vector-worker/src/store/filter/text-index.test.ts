import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
const TITLES = ['The Robots of Dawn', 'I, Robot', 'Robot Dreams', 'The Stars, Like Dust', 'Of Matters Great and Small', 'robotics.io/the-END'];
beforeAll(async () => {
  t = await openTestStore('text');
  await t.store.createCollection('t', { vectors: { size: 2, distance: 'Dot' } });
  await t.store.upsertPoints('t', { points: TITLES.map((title, i) => ({ id: i + 1, vector: [1, 0], payload: { title } })) }, { wait: true });
});
afterAll(async () => {
  await t.close();
});

async function ids(match: Record<string, unknown>, key = 'title'): Promise<unknown[]> {
  const r = await t.store.scrollPoints('t', { limit: 100, filter: { must: [{ key, match }] } });
  return r.points.map((p) => p.id);
}
async function index(schema: unknown): Promise<void> {
  await t.store.createFieldIndex('t', { field_name: 'title', field_schema: schema }, { wait: true });
}

describe('full-text index parameters (test_fts.py, test_phrase_matching.py)', () => {
  it('without an index: substring; match.prefix on string values', async () => {
    await t.store.deleteFieldIndex('t', 'title');
    expect(await ids({ text: 'Robot' })).toEqual([1, 2, 3]);
    expect(await ids({ prefix: 'The ' })).toEqual([1, 4]);
    expect(await ids({ prefix: '' })).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('word tokenizer, lower-cased by default; english stop words drop from query and text', async () => {
    await index({ type: 'text', tokenizer: 'word' });
    expect(await ids({ text: 'robot' })).toEqual([2, 3]);
    expect(await ids({ text_any: 'robot of the star' })).toEqual([1, 2, 3, 4, 5, 6]);
    await index({ type: 'text', tokenizer: 'word', lowercase: true, stopwords: 'english' });
    // "of" and "the" are stop words: only robot and star remain (star ≠ stars).
    expect(await ids({ text_any: 'robot of the star' })).toEqual([2, 3]);
    // A query made only of stop words has no tokens and matches nothing.
    expect(await ids({ text: 'of the' })).toEqual([]);
    // Other languages' lists (here German: "der", "und" are stop words; "robot" is not).
    await index({ type: 'text', stopwords: { languages: ['german'] } });
    expect(await ids({ text_any: 'der und' })).toEqual([]);
    expect(await ids({ text: 'der robot' })).toEqual([2, 3]);
    await index({ type: 'text', stopwords: { custom: ['robot'] } });
    expect(await ids({ text: 'robot' })).toEqual([]);
  });

  it('custom stop words are case-sensitive when the index keeps case (test_stopwords.py)', async () => {
    await t.store.createCollection('sw', { vectors: { size: 2, distance: 'Dot' } });
    await t.store.upsertPoints(
      'sw',
      { points: [{ id: 1, vector: [1, 0], payload: { title: 'The quick brown fox jumps over the lazy dog' } }, { id: 2, vector: [0, 1], payload: { title: 'LAZY sentinel' } }] },
      { wait: true },
    );
    await t.store.createFieldIndex('sw', { field_name: 'title', field_schema: { type: 'text', tokenizer: 'word', lowercase: false, stopwords: { custom: ['the', 'The', 'LAZY'] } } }, { wait: true });
    const found = async (text: string) => (await t.store.scrollPoints('sw', { filter: { must: [{ key: 'title', match: { text } }] } })).points.map((p) => p.id);
    expect({ lazy: await found('lazy'), The: await found('The'), LAZY: await found('LAZY') }).toEqual({ lazy: [1], The: [], LAZY: [] });
  });

  it('lowercase: false keeps case; token length limits drop short and long tokens', async () => {
    await index({ type: 'text', lowercase: false });
    expect(await ids({ text: 'robot' })).toEqual([]);
    expect(await ids({ text: 'Robot' })).toEqual([2, 3]);
    await index({ type: 'text', min_token_len: 3, max_token_len: 5 });
    // "I" is below the minimum on both sides: the query keeps only "robot".
    expect(await ids({ text: 'I robot' })).toEqual([2, 3]);
    expect(await ids({ text: 'robots' })).toEqual([]);
  });

  it('prefix tokenizer: a query token matches the tokens it begins; whitespace tokenizer keeps punctuation', async () => {
    await index({ type: 'text', tokenizer: 'prefix' });
    expect(await ids({ text: 'ROBO' })).toEqual([1, 2, 3, 6]);
    expect(await ids({ text: 'robo dre' })).toEqual([3]);
    await index({ type: 'text', tokenizer: 'whitespace' });
    expect(await ids({ text: 'stars' })).toEqual([]);
    expect(await ids({ text: 'stars,' })).toEqual([4]);
    expect(await ids({ text: 'robotics.io/the-end' })).toEqual([6]);
  });

  it('stemmer: Snowball stems text and query alike', async () => {
    await index({ type: 'text' });
    expect(await ids({ text: 'robots' })).toEqual([1]);
    await index({ type: 'text', stemmer: { type: 'snowball', language: 'english' } });
    expect(await ids({ text: 'robots' })).toEqual([1, 2, 3, 6]); // robotics → robot too
    expect(await ids({ text: 'dreaming' })).toEqual([3]);
    expect(await ids({ text: 'matter' })).toEqual([5]);
  });

  it('ascii_folding: accents fold away on both sides', async () => {
    await t.store.upsertPoints('t', { points: [{ id: 7, vector: [1, 0], payload: { title: 'Ação Crème Brûlée Łódź' } }] }, { wait: true });
    await index({ type: 'text' });
    expect(await ids({ text: 'acao' })).toEqual([]);
    await index({ type: 'text', ascii_folding: true });
    expect(await ids({ text: 'acao creme' })).toEqual([7]);
    expect(await ids({ text: 'BRÛLÉE lodz' })).toEqual([7]);
    await t.store.deletePoints('t', { points: [7] }, { wait: true });
  });

  it('phrase: consecutive tokens', async () => {
    await index({ type: 'text', phrase_matching: true });
    expect(await ids({ phrase: 'robots of dawn' })).toEqual([1]);
    expect(await ids({ phrase: 'dawn robots' })).toEqual([]);
  });
});

describe('slice condition (test_filter_slice.py)', () => {
  it('slices are disjoint and cover every point; must_not is the complement', async () => {
    const seen: unknown[] = [];
    for (let index = 0; index < 3; index++) {
      const r = await t.store.scrollPoints('t', { limit: 100, filter: { must: [{ slice: { total: 3, index } }] } });
      seen.push(...r.points.map((p) => p.id));
    }
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6]);
    const inSlice = (await t.store.countPoints('t', { filter: { must: [{ slice: { total: 2, index: 0 } }] } })).count;
    const outside = (await t.store.countPoints('t', { filter: { must_not: [{ slice: { total: 2, index: 0 } }] } })).count;
    expect(inSlice + outside).toBe(6);
  });

  it('index out of range is 422, total 0 is 400', async () => {
    let err = await qdrantError(t.store.countPoints('t', { filter: { must: [{ slice: { total: 4, index: 4 } }] } }));
    expect([err.status, err.message]).toEqual([422, 'Validation error in JSON body: [filter.must[0].slice.index: value 4 invalid, must be less than total (4)]']);
    err = await qdrantError(t.store.countPoints('t', { filter: { must: [{ slice: { total: 0, index: 0 } }] } }));
    expect(err.status).toBe(400);
  });
});
