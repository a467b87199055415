import { describe, expect, it } from 'vitest';
import { listVoices, OPENAI_VOICES, parseVoiceList, resolveVoice } from './voices.ts';

const OPENAI_NAMES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse'];

describe('voices', () => {
  it('the 11 OpenAI names resolve (case-insensitively) to distinct espeak specs that resolve to themselves', async () => {
    expect(Object.keys(OPENAI_VOICES)).toEqual(OPENAI_NAMES);
    const specs = await Promise.all(OPENAI_NAMES.map((name) => resolveVoice(name.toUpperCase())));
    expect(specs.every((spec) => typeof spec === 'string')).toBe(true);
    expect(new Set(specs).size).toBe(11);
    for (const spec of specs) expect(await resolveVoice(spec!)).toBe(spec);
  });

  it('resolves espeak voices, names, aliases and variants; unknown → null', async () => {
    expect(await resolveVoice('de')).toBe('de');
    expect(await resolveVoice('en-us')).toBe('en-us');
    expect(await resolveVoice('EN-GB-X-RP')).toBe('en-gb-x-rp');
    expect(await resolveVoice('German')).toBe('de');
    expect(await resolveVoice('gmw/en-US')).toBe('en-us');
    expect(await resolveVoice('en-us+f3')).toBe('en-us+f3');
    expect(await resolveVoice('en-us+female3')).toBe('en-us+f3');
    expect(await resolveVoice('de+alex')).toBe('de+Alex'); // espeak matches variant files case-sensitively
    expect(await resolveVoice('nope')).toBeNull();
    expect(await resolveVoice('en-us+nope')).toBeNull();
    expect(await resolveVoice('nope+f3')).toBeNull();
    expect(await resolveVoice('en-us+f3+m3')).toBeNull();
    expect(await resolveVoice('alloy+f3')).toBeNull();
    expect(await resolveVoice('')).toBeNull();
    expect(await resolveVoice('__proto__')).toBeNull();
    expect(await resolveVoice('constructor')).toBeNull();
  });

  it('lists the 11 OpenAI names first, then more than 50 espeak voices with unique ids', async () => {
    const voices = await listVoices();
    expect(voices.slice(0, 11).map((v) => v.id)).toEqual(OPENAI_NAMES);
    const espeak = voices.slice(11);
    expect(espeak.length).toBeGreaterThan(50);
    expect(new Set(voices.map((v) => v.id)).size).toBe(voices.length);
    expect(voices.every((v) => v.engine === 'espeak-ng')).toBe(true);
    expect(espeak.find((v) => v.id === 'en-us')).toMatchObject({ name: 'English (America)', language: 'en-us' });
    // Every listed id is accepted back.
    for (const voice of voices) expect(await resolveVoice(voice.id)).not.toBeNull();
  });

  it('parses espeak-ng --voices output', () => {
    const rows = parseVoiceList(
      'Pty Language       Age/Gender VoiceName          File                 Other Languages\n' +
        ' 5  en-gb-x-rp      --/M      English_(Received_Pronunciation) gmw/en-GB-x-rp       (en-gb 4)(en 5)\n' +
        ' 5  variant         --/F      female3            !v/f3\n',
    );
    expect(rows).toEqual([
      {
        language: 'en-gb-x-rp',
        name: 'English_(Received_Pronunciation)',
        file: 'gmw/en-GB-x-rp',
        priority: 5,
        others: [
          { language: 'en-gb', priority: 4 },
          { language: 'en', priority: 5 },
        ],
      },
      { language: 'variant', name: 'female3', file: '!v/f3', priority: 5, others: [] },
    ]);
  });
});
