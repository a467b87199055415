import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';

/** One piece of a document's text, with where it sits in the text (character offsets). */
export interface TextChunk {
  index: number;
  content: string;
  start: number;
  end: number;
}

export interface ChunkOptions {
  /** Open WebUI's CHUNK_SIZE: 1000 (characters, or tokens with the token splitter). */
  size: number;
  /** Open WebUI's CHUNK_OVERLAP: 100 (same unit as size). */
  overlap: number;
  /**
   * Open WebUI's TEXT_SPLITTER: '' or 'character' = LangChain's RecursiveCharacterTextSplitter,
   * 'token' = its TokenTextSplitter over a tiktoken encoding (pass `encoding`, from tokenEncoding()).
   */
  splitter?: '' | 'character' | 'token';
  encoding?: Tiktoken;
}

/**
 * Split text as Open WebUI 0.10.2 does before embedding (routers/retrieval.py save_docs_to_vector_db):
 * by default LangChain's RecursiveCharacterTextSplitter(chunk_size, chunk_overlap, add_start_index)
 * — separators "\n\n", "\n", " ", "" tried in turn, each separator kept at the start of the piece
 * after it, pieces merged greedily up to `size` with `overlap` carried over, chunks trimmed;
 * lengths in code points as Python's len(). With `splitter: 'token'`, TokenTextSplitter: windows
 * of `size` tokens stepping by size − overlap, decoded back to text. The same text and settings
 * give the same chunks as Open WebUI, so a knowledge base moved between the two retrieves alike.
 */
export function chunkText(text: string, opts: ChunkOptions): TextChunk[] {
  const { size, overlap } = opts;
  if (!(size > 0)) throw new RangeError('chunk size must be positive');
  if (overlap < 0 || overlap >= size) throw new RangeError(`chunk overlap (${overlap}) must be at least 0 and smaller than the chunk size (${size})`);
  const pieces = opts.splitter === 'token' ? splitTokens(text, size, overlap, requireEncoding(opts.encoding)) : splitRecursive(text, SEPARATORS, size, overlap);
  return withOffsets(text, pieces, overlap, opts.splitter === 'token');
}

const SEPARATORS = ['\n\n', '\n', ' ', ''];

/** Python's len(): code points, so a surrogate pair counts once. */
export function pyLen(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) n--;
  }
  return n;
}

/** Split keeping each separator at the start of the piece that follows it; empty pieces dropped. */
function splitKeep(text: string, sep: string): string[] {
  if (sep === '') return Array.from(text);
  const parts = text.split(sep);
  const out: string[] = [];
  parts.forEach((p, i) => {
    const piece = i === 0 ? p : sep + p;
    if (piece !== '') out.push(piece);
  });
  return out;
}

function splitRecursive(text: string, separators: string[], size: number, overlap: number): string[] {
  const final: string[] = [];
  let separator = separators[separators.length - 1]!;
  let rest: string[] = [];
  for (let i = 0; i < separators.length; i++) {
    const s = separators[i]!;
    if (s === '') {
      separator = s;
      break;
    }
    if (text.includes(s)) {
      separator = s;
      rest = separators.slice(i + 1);
      break;
    }
  }
  let good: string[] = [];
  for (const s of splitKeep(text, separator)) {
    if (pyLen(s) < size) {
      good.push(s);
      continue;
    }
    if (good.length) {
      final.push(...mergeSplits(good, size, overlap));
      good = [];
    }
    if (!rest.length) final.push(s);
    else final.push(...splitRecursive(s, rest, size, overlap));
  }
  if (good.length) final.push(...mergeSplits(good, size, overlap));
  return final;
}

/** LangChain's _merge_splits with the kept separators already inside the pieces (joined by ''). */
function mergeSplits(splits: string[], size: number, overlap: number): string[] {
  const docs: string[] = [];
  let current: string[] = [];
  let lens: number[] = [];
  let total = 0;
  for (const d of splits) {
    const len = pyLen(d);
    if (total + len > size && current.length) {
      const doc = current.join('').trim();
      if (doc) docs.push(doc);
      while (total > overlap || (total + len > size && total > 0)) {
        total -= lens[0]!;
        current = current.slice(1);
        lens = lens.slice(1);
      }
    }
    current.push(d);
    lens.push(len);
    total += len;
  }
  const doc = current.join('').trim();
  if (doc) docs.push(doc);
  return docs;
}

function splitTokens(text: string, size: number, overlap: number, enc: Tiktoken): string[] {
  // Open WebUI passes disallowed_special=(): special-token text is encoded as ordinary text.
  const ids = enc.encode(text, [], []);
  const out: string[] = [];
  for (let start = 0; start < ids.length; start += size - overlap) {
    const end = Math.min(start + size, ids.length);
    out.push(enc.decode(ids.slice(start, end)));
    if (end === ids.length) break;
  }
  return out;
}

/**
 * Offsets as LangChain's add_start_index finds them: each chunk searched for from just before
 * where the previous one ended, less the overlap. A chunk not found verbatim (a token window that
 * cut a character in two) keeps the previous end as its start.
 */
function withOffsets(text: string, pieces: string[], overlap: number, tokens: boolean): TextChunk[] {
  const out: TextChunk[] = [];
  let index = 0;
  let prevLen = 0;
  for (const content of pieces) {
    if (!content.trim()) continue;
    // Token overlap is in tokens, not characters: search from the previous start instead.
    const from = tokens ? index : Math.max(0, index + prevLen - overlap);
    const found = text.indexOf(content, from);
    index = found >= 0 ? found : index + prevLen;
    prevLen = content.length;
    out.push({ index: out.length, content, start: index, end: index + content.length });
  }
  return out;
}

function requireEncoding(enc: Tiktoken | undefined): Tiktoken {
  if (!enc) throw new Error("TEXT_SPLITTER 'token' needs a tiktoken encoding (tokenEncoding())");
  return enc;
}

export type TiktokenEncodingName = 'cl100k_base' | 'o200k_base' | 'p50k_base' | 'r50k_base' | 'gpt2';

const RANKS: Record<TiktokenEncodingName, () => Promise<{ default: TiktokenBPE }>> = {
  cl100k_base: () => import('js-tiktoken/ranks/cl100k_base'),
  o200k_base: () => import('js-tiktoken/ranks/o200k_base'),
  p50k_base: () => import('js-tiktoken/ranks/p50k_base'),
  r50k_base: () => import('js-tiktoken/ranks/r50k_base'),
  gpt2: () => import('js-tiktoken/ranks/gpt2'),
};
const encodings = new Map<TiktokenEncodingName, Promise<Tiktoken>>();

/**
 * Open WebUI's TIKTOKEN_ENCODING_NAME (default cl100k_base), loaded on first use only: each rank
 * table is megabytes, and most deployments never split by tokens.
 */
export function tokenEncoding(name: TiktokenEncodingName): Promise<Tiktoken> {
  let p = encodings.get(name);
  if (!p) {
    p = RANKS[name]().then((m) => new Tiktoken(m.default));
    encodings.set(name, p);
  }
  return p;
}

/** The chunker the settings ask for (CHUNK_SIZE, CHUNK_OVERLAP, TEXT_SPLITTER, TIKTOKEN_ENCODING_NAME). */
export async function chunkerFor(s: {
  CHUNK_SIZE: number;
  CHUNK_OVERLAP: number;
  TEXT_SPLITTER: '' | 'character' | 'token';
  TIKTOKEN_ENCODING_NAME: TiktokenEncodingName;
}): Promise<(text: string) => TextChunk[]> {
  const encoding = s.TEXT_SPLITTER === 'token' ? await tokenEncoding(s.TIKTOKEN_ENCODING_NAME) : undefined;
  return (text) => chunkText(text, { size: s.CHUNK_SIZE, overlap: s.CHUNK_OVERLAP, splitter: s.TEXT_SPLITTER, ...(encoding ? { encoding } : {}) });
}
