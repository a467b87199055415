import { describe, expect, it } from 'vitest';
import { chunkerFor, chunkText, pyLen, tokenEncoding } from './chunk.ts';

/**
 * The chunker against LangChain's RecursiveCharacterTextSplitter / TokenTextSplitter as Open WebUI
 * 0.10.2 configures them. Expected values are worked by hand from LangChain's algorithm (split on
 * the first separator present, keep it at the start of the next piece, merge up to the size,
 * carry pieces over while they fit the overlap).
 */
describe('recursive character splitter', () => {
  it('merges words up to the size and carries the overlap over', () => {
    const text = 'one two three four five six';
    const chunks = chunkText(text, { size: 10, overlap: 5 });
    expect(chunks.map((c) => c.content)).toEqual(['one two', 'two three', 'four five', 'five six']);
    // add_start_index: where each chunk sits in the text.
    expect(chunks.map((c) => c.start)).toEqual([0, 4, 14, 19]);
    for (const c of chunks) expect(text.slice(c.start, c.end)).toBe(c.content);
    expect(chunks.map((c) => c.index)).toEqual([0, 1, 2, 3]);
  });

  it('drops a piece from the overlap when it does not fit', () => {
    expect(chunkText('aaa bbb ccc ddd', { size: 7, overlap: 3 }).map((c) => c.content)).toEqual(['aaa bbb', 'ccc', 'ddd']);
  });

  it('prefers paragraphs, then lines, then words; trims every chunk', () => {
    const chunks = chunkText('para one.\n\npara two is here.', { size: 15, overlap: 0 });
    expect(chunks.map((c) => c.content)).toEqual(['para one.', 'para two is', 'here.']);
  });

  it('keeps whole paragraphs together when they fit', () => {
    const text = 'First paragraph.\n\nSecond one.\n\nThird.';
    expect(chunkText(text, { size: 1000, overlap: 100 }).map((c) => c.content)).toEqual([text]);
  });

  it('cuts a word longer than the size into characters', () => {
    expect(chunkText('abcdefghij', { size: 4, overlap: 1 }).map((c) => c.content)).toEqual(['abcd', 'defg', 'ghij']);
  });

  it('counts code points as Python does (an emoji is one)', () => {
    expect(pyLen('a😀b')).toBe(3);
    expect(chunkText('😀😀😀 😀😀😀', { size: 4, overlap: 0 }).map((c) => c.content)).toEqual(['😀😀😀', '😀😀😀']);
  });

  it('with the defaults (1000/100) over real text: chunks within the size, overlapping, each where it says', () => {
    const sentence = (i: number) => `Sentence ${i} says something about retrieval, chunking and search quality. `;
    const text = Array.from({ length: 200 }, (_, i) => sentence(i) + (i % 7 === 6 ? '\n\n' : '')).join('');
    const chunks = chunkText(text, { size: 1000, overlap: 100 });
    expect(chunks.length).toBeGreaterThan(10);
    for (const c of chunks) {
      expect(pyLen(c.content)).toBeLessThanOrEqual(1000);
      expect(text.slice(c.start, c.end)).toBe(c.content);
    }
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.start).toBeGreaterThan(chunks[i - 1]!.start);
    // Nothing is lost: every word of the text is in some chunk.
    const words = new Set(chunks.flatMap((c) => c.content.split(/\s+/)));
    for (const w of text.split(/\s+/).filter(Boolean)) expect(words.has(w)).toBe(true);
  });

  it('returns nothing for empty or blank text, and refuses an overlap of the size or more', () => {
    expect(chunkText('', { size: 10, overlap: 2 })).toEqual([]);
    expect(chunkText(' \n\n  ', { size: 10, overlap: 2 })).toEqual([]);
    expect(() => chunkText('x', { size: 10, overlap: 10 })).toThrow(/overlap/);
  });
});

describe('token splitter (tiktoken)', () => {
  it('windows of size tokens stepping by size − overlap, decoded back to text', async () => {
    const enc = await tokenEncoding('cl100k_base');
    const text = 'The quick brown fox jumps over the lazy dog while the cat watches from the window sill.';
    const ids = enc.encode(text);
    const chunks = chunkText(text, { size: 6, overlap: 2, splitter: 'token', encoding: enc });
    const expected: string[] = [];
    for (let s = 0; s < ids.length; s += 4) {
      expected.push(enc.decode(ids.slice(s, s + 6)));
      if (s + 6 >= ids.length) break;
    }
    expect(chunks.map((c) => c.content)).toEqual(expected);
    expect(enc.encode(chunks[0]!.content)).toHaveLength(6);
    expect(chunks[0]!.content).toBe('The quick brown fox jumps over');
  });

  it('encodes special-token text as ordinary text (Open WebUI: disallowed_special=())', async () => {
    const chunk = await chunkerFor({ CHUNK_SIZE: 50, CHUNK_OVERLAP: 0, TEXT_SPLITTER: 'token', TIKTOKEN_ENCODING_NAME: 'cl100k_base' });
    expect(chunk('before <|endoftext|> after').map((c) => c.content)).toEqual(['before <|endoftext|> after']);
  });

  it('needs an encoding', () => {
    expect(() => chunkText('x', { size: 5, overlap: 0, splitter: 'token' })).toThrow(/encoding/);
  });
});
