import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ESPEAK_BIN } from './espeak.ts';
import { childEnvironment } from './config.ts';

const execFileAsync = promisify(execFile);

export interface Voice {
  id: string;
  name: string;
  language?: string;
  engine: 'espeak-ng' | 'upstream';
}

/**
 * OpenAI voice names → espeak-ng specs ("<voice>+<variant>"). Each is distinct and keeps OpenAI's rough
 * character: male/female, British for fable and ballad, the lowest-pitched variant (m8) for onyx.
 */
export const OPENAI_VOICES: Readonly<Record<string, string>> = Object.freeze({
  alloy: 'en-us+m3',
  ash: 'en-us+m2',
  ballad: 'en-gb-x-rp+m7',
  coral: 'en-us+f2',
  echo: 'en-us+m1',
  fable: 'en-gb-x-rp',
  onyx: 'en-us+m8',
  nova: 'en-us+f3',
  sage: 'en-gb+f4',
  shimmer: 'en-us+f5',
  verse: 'en-us+m7',
});

interface EspeakVoice {
  id: string;
  name: string;
  language: string;
  file: string;
}

interface Catalog {
  voices: EspeakVoice[];
  /** lower-cased id, name (with "_" or " "), file path or "other language" alias → voice id */
  voiceIndex: Map<string, string>;
  /** lower-cased variant file id ("f3") or name ("female3") → variant id as espeak spells it ("f3", "Alex") */
  variantIndex: Map<string, string>;
}

/** Output columns: Pty Language Age/Gender VoiceName File Other-Languages, e.g. " 5  en-gb-x-rp --/M English_(Received_Pronunciation) gmw/en-GB-x-rp (en-gb 4)(en 5)". */
export function parseVoiceList(output: string): { language: string; name: string; file: string; priority: number; others: { language: string; priority: number }[] }[] {
  const rows = [];
  for (const line of output.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 5 || fields[0] === 'Pty') continue;
    const [priority, language, , name, file] = fields as [string, string, string, string, string];
    const others = [...fields.slice(5).join(' ').matchAll(/\((\S+)\s+(\d+)\)/g)].map((m) => ({
      language: m[1] as string,
      priority: Number(m[2]),
    }));
    rows.push({ language, name, file, priority: Number(priority), others });
  }
  return rows;
}

async function espeakList(arg: string): Promise<string> {
  const { stdout } = await execFileAsync(ESPEAK_BIN, [arg], { timeout: 10_000, maxBuffer: 1 << 20, env: { PATH: childEnvironment().PATH } });
  return stdout;
}

async function loadCatalog(): Promise<Catalog> {
  const [voiceOut, variantOut] = await Promise.all([espeakList('--voices'), espeakList('--voices=variant')]);
  const voices: EspeakVoice[] = [];
  const voiceIndex = new Map<string, string>();
  const aliases = new Map<string, { id: string; priority: number }>();
  const ids = new Set<string>();

  for (const row of parseVoiceList(voiceOut)) {
    // Language codes are unique except for a few (two "yue" voices); the later one is addressed by file path.
    const id = ids.has(row.language.toLowerCase()) ? row.file : row.language;
    ids.add(id.toLowerCase());
    voices.push({ id, name: row.name.replace(/_/g, ' '), language: row.language, file: row.file });
    for (const key of [id, row.name, row.name.replace(/_/g, ' '), row.file]) {
      if (!voiceIndex.has(key.toLowerCase())) voiceIndex.set(key.toLowerCase(), id);
    }
    // "Other languages" such as "en" for en-gb and en-us: the voice with the best (lowest) priority wins,
    // which is also the voice espeak-ng itself picks for "-v en".
    for (const other of row.others) {
      const current = aliases.get(other.language.toLowerCase());
      if (!current || other.priority < current.priority) aliases.set(other.language.toLowerCase(), { id, priority: other.priority });
    }
  }
  for (const [alias, { id }] of aliases) if (!voiceIndex.has(alias)) voiceIndex.set(alias, id);

  const variantIndex = new Map<string, string>();
  for (const row of parseVoiceList(variantOut)) {
    // Variants are addressed by their file name under "!v/"; espeak matches it case-sensitively and silently
    // ignores an unknown variant, so requests are mapped to the exact spelling here.
    const variant = row.file.replace(/^!v\//, '');
    for (const key of [variant, row.name]) if (!variantIndex.has(key.toLowerCase())) variantIndex.set(key.toLowerCase(), variant);
  }
  return { voices, voiceIndex, variantIndex };
}

let catalog: Promise<Catalog> | undefined;

/** espeak's voice list never changes while we run: read it once per process; retry if reading failed. */
function getCatalog(): Promise<Catalog> {
  catalog ??= loadCatalog().catch((err: unknown) => {
    catalog = undefined;
    throw err;
  });
  return catalog;
}

/** The 11 OpenAI names first, then every espeak-ng voice. "<voice>+<variant>" combinations are accepted but not listed. */
export async function listVoices(): Promise<Voice[]> {
  const { voices } = await getCatalog();
  return [
    ...Object.keys(OPENAI_VOICES).map((id): Voice => ({ id, name: id, language: 'en', engine: 'espeak-ng' })),
    ...voices.map((v): Voice => ({ id: v.id, name: v.name, language: v.language, engine: 'espeak-ng' })),
  ];
}

/**
 * The espeak-ng spec for a requested voice, or null when unknown. Accepts OpenAI names, espeak voice ids,
 * names, file paths and language aliases, each optionally with "+<variant>"; all case-insensitively.
 * The result is canonical and resolves to itself, so it can be validated again downstream.
 */
export async function resolveVoice(name: string): Promise<string | null> {
  if (typeof name !== 'string') return null;
  const wanted = name.trim().toLowerCase();
  if (wanted === '') return null;
  const openai = OPENAI_VOICES[wanted];
  if (openai !== undefined && Object.hasOwn(OPENAI_VOICES, wanted)) return openai;

  const { voiceIndex, variantIndex } = await getCatalog();
  const parts = wanted.split('+');
  if (parts.length > 2) return null; // espeak-ng applies one variant only
  const [base = '', variant] = parts;
  const voiceId = voiceIndex.get(base);
  if (voiceId === undefined) return null;
  if (variant === undefined) return voiceId;
  const variantId = variantIndex.get(variant);
  return variantId === undefined ? null : `${voiceId}+${variantId}`;
}
