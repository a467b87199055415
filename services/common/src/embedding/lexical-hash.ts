/**
 * The offline default: a deterministic *lexical* embedding by feature hashing. No model, no weights,
 * no network. It captures shared words and word parts (so "passwords" ≈ "password", "reset" ≈
 * "resetting"), not meaning: synonyms and paraphrases with no word in common score like unrelated
 * text. services/vector-mcp/README.md reports how well it does on a labelled set.
 *
 * Features per text:
 * - each word (lowercased, accents stripped, apostrophes dropped, light suffix stemming), weight 1;
 * - each character 3-, 4- and 5-gram of the unstemmed word with boundary marks (`<pass`, `ord>`),
 *   weight CHAR_NGRAM_WEIGHT;
 * - common English function words ("the", "is", "how"…) count as words at STOPWORD_WEIGHT and add no
 *   character n-grams, unless the text has nothing else.
 * A feature seen `tf` times gets `weight × (1 + ln tf)` (sublinear TF). Each feature is hashed to one
 * of DIMENSION buckets with a hashed sign (signed feature hashing, so collisions cancel on average
 * rather than pile up), and the vector is L2-normalised.
 *
 * The name carries a version: any change to the features, weights or hashing changes the vectors, so it
 * must come with a new name (and so a new named vector), never silently under the old one. Vectors
 * already stored under the old name (vector-mcp collections, the chat platform's `memory.embedding`)
 * would otherwise be compared with vectors built differently.
 */
export const LEXICAL_HASH_MODEL = 'lexical-hash-v1';
export const LEXICAL_HASH_DIMENSION = 384;

const CHAR_NGRAM_WEIGHT = 0.4;
const STOPWORD_WEIGHT = 0.1;
const MIN_NGRAM = 3;
const MAX_NGRAM = 5;

// A short English function-word list: words that make unrelated sentences look alike.
const STOPWORDS = new Set(
  (
    'a an and are as at be been being but by can could did do does doing done for from had has have ' +
    'having he her hers him his how i if in into is it its itself just me my no nor not of off on once ' +
    'only or our ours out over own she should so some such than that the their theirs them then there ' +
    'these they this those through to too under until up very was we were what when where which while ' +
    'who whom why will with would you your yours about again against all am any because before below ' +
    'between both during each few further here more most other same s t ll re ve d m o y'
  ).split(' '),
);

/** The embedding of one text: a unit vector of LEXICAL_HASH_DIMENSION numbers. */
export function embedLexical(text: string): number[] {
  const features = extractFeatures(text);
  const vector = new Float64Array(LEXICAL_HASH_DIMENSION);
  for (const [feature, { weight, tf }] of features) {
    const h = fnv1a(feature);
    const index = fmix32(h) % LEXICAL_HASH_DIMENSION;
    const sign = fmix32(h ^ 0x9e3779b9) & 1 ? 1 : -1;
    vector[index]! += sign * weight * (1 + Math.log(tf));
  }
  let norm = 0;
  for (const x of vector) norm += x * x;
  norm = Math.sqrt(norm);
  const out = new Array<number>(LEXICAL_HASH_DIMENSION);
  for (let i = 0; i < LEXICAL_HASH_DIMENSION; i++) out[i] = norm > 0 ? vector[i]! / norm : 0;
  return out;
}

interface FeatureStat {
  weight: number;
  tf: number;
}

/** Lowercase, strip accents and apostrophes, split on anything that is not a letter or a digit. */
export function tokenize(text: string): string[] {
  const folded = text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/['’`]/g, '');
  return folded.match(/[\p{L}\p{N}]+/gu) ?? [];
}

function extractFeatures(text: string): Map<string, FeatureStat> {
  const features = new Map<string, FeatureStat>();
  const add = (feature: string, weight: number): void => {
    const seen = features.get(feature);
    if (seen) seen.tf += 1;
    else features.set(feature, { weight, tf: 1 });
  };

  const tokens = tokenize(text);
  const allStopwords = tokens.every((t) => STOPWORDS.has(t));
  for (const token of tokens) {
    const isStop = !allStopwords && STOPWORDS.has(token);
    add(`w:${stem(token)}`, isStop ? STOPWORD_WEIGHT : 1);
    if (isStop) continue;
    const marked = `<${token}>`;
    for (let n = MIN_NGRAM; n <= MAX_NGRAM; n++) {
      for (let i = 0; i + n <= marked.length; i++) add(`c:${marked.slice(i, i + n)}`, CHAR_NGRAM_WEIGHT);
    }
  }
  // Text with no letters or digits at all ("!!!", "") still gets a fixed unit vector, never all zeros
  // (a zero vector has no cosine).
  if (features.size === 0) add('empty:', 1);
  return features;
}

/** Light English suffix stripping for the whole-word feature (char n-grams see the original word). */
export function stem(word: string): string {
  if (word.length <= 3 || /^\p{N}+$/u.test(word)) return word;
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('es') && /(?:ss|sh|ch|x|z)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us') && !word.endsWith('is')) {
    return word.slice(0, -1);
  }
  return word;
}

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** MurmurHash3's 32-bit finaliser: spreads FNV's weak low bits before taking a bucket and a sign. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
