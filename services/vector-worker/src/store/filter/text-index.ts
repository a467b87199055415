/**
 * Full-text index parameters (Qdrant's TextIndexParams): how a text index makes its tokens, for
 * `match.text` / `text_any` / `phrase` on an indexed key (match.ts) and for BM25 documents.
 */
/**
 * How a text index tokenizes: `word` / `multilingual` split on non-alphanumerics, `whitespace` on
 * white space, `prefix` like `word` with a query token matching every token it begins; `lowercase`
 * (default true); tokens shorter than `min_token_len` or longer than `max_token_len` dropped;
 * `stopwords` (`"english"`, or `{languages, custom}`; custom words case-sensitive when `lowercase`
 * is false) dropped from both sides; `stemmer: {type: "snowball", language}` stems what is
 * left with Postgres's Snowball dictionary of that language; `ascii_folding` folds accents away.
 */
export function textTokenizing(params: Record<string, unknown> | undefined): {
  split: string;
  lowercase: boolean;
  min: number;
  max: number;
  stopwords: string[];
  prefix: boolean;
  /** The Postgres Snowball dictionary of `stemmer` (`pg_catalog.english_stem`), if any. */
  stem?: string;
  /** `ascii_folding`: accented letters folded to ASCII. */
  fold: boolean;
  /** Postgres Snowball dictionaries whose stop word list applies (a stop word lexizes to `{}`). */
  stopDictionaries: string[];
} {
  const p = params ?? {};
  const lowercase = p.lowercase !== false;
  const tokenizer = typeof p.tokenizer === 'string' ? p.tokenizer : 'word';
  const num = (v: unknown, d: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : d);
  const stop = new Set<string>();
  const dictionaries = new Set<string>();
  const addLanguage = (l: unknown) => {
    if (typeof l !== 'string') return;
    const lang = l.toLowerCase();
    if (lang === 'english') for (const w of ENGLISH_STOPWORDS) stop.add(w);
    else if (STOPWORD_DICTIONARIES.has(lang)) dictionaries.add(`pg_catalog.${lang}_stem`);
  };
  const sw = p.stopwords;
  if (typeof sw === 'string') addLanguage(sw);
  else if (typeof sw === 'object' && sw !== null) {
    const o = sw as { languages?: unknown; custom?: unknown };
    if (Array.isArray(o.languages)) o.languages.forEach(addLanguage);
    // Custom stop words are compared as given unless the index lower-cases (Qdrant issue 8724).
    if (Array.isArray(o.custom)) for (const w of o.custom) if (typeof w === 'string') stop.add(lowercase ? w.toLowerCase() : w);
  }
  // Qdrant's Snowball stemmer, by Postgres's own Snowball dictionaries (the same algorithms, for
  // every language Qdrant offers). A stop word of the dictionary's list comes back empty: kept as is.
  const st = p.stemmer as { type?: unknown; language?: unknown } | undefined;
  const lang = typeof st?.language === 'string' ? st.language.toLowerCase() : undefined;
  const stem = st?.type === 'snowball' && lang && SNOWBALL_LANGUAGES.has(lang) ? `pg_catalog.${lang}_stem` : undefined;
  return {
    split: tokenizer === 'whitespace' ? '\\s+' : '[^[:alnum:]]+',
    lowercase,
    min: num(p.min_token_len, 0),
    max: num(p.max_token_len, 2 ** 31 - 1),
    stopwords: [...stop],
    prefix: tokenizer === 'prefix',
    fold: p.ascii_folding === true,
    stopDictionaries: [...dictionaries],
    ...(stem ? { stem } : {}),
  };
}

/** Snowball's English stop word list, as Qdrant ships it. */
export const ENGLISH_STOPWORDS = `i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom this that these those am is are was were be been being have has had having
do does did doing would should could ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd
i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't shouldn't
can't cannot couldn't mustn't let's that's who's what's here's there's when's where's why's how's a an the and but if or because as until while
of at by for with about against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so than too very`.split(/\s+/);

/**
 * Stop word languages of Qdrant's that Postgres's Snowball dictionaries carry a list for (the
 * Snowball project's lists); Qdrant's other languages (arabic, chinese, greek, …) are ignored.
 */
const STOPWORD_DICTIONARIES = new Set('danish dutch finnish french german hungarian italian nepali norwegian portuguese russian spanish swedish turkish'.split(' '));

/** Qdrant's SnowballLanguage values; each has a `<language>_stem` dictionary in Postgres. */
const SNOWBALL_LANGUAGES = new Set(
  'arabic armenian danish dutch english finnish french german greek hungarian italian norwegian portuguese romanian russian spanish swedish tamil turkish'.split(' '),
);
