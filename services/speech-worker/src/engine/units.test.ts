// Pure helpers: speed mapping, text preparation, WAV header, content types, limiter.
import { describe, expect, it } from 'vitest';
import { SpeechInputError } from './errors.ts';
import { ffmpegArgs } from './encoder.ts';
import { espeakArgs } from './espeak.ts';
import { AUDIO_FORMATS, contentTypeFor } from './formats.ts';
import { Limiter } from './limiter.ts';
import { planSpeed } from './speed.ts';
import { prepareInput } from './text.ts';
import { wavHeader } from './wav.ts';

describe('planSpeed', () => {
  it('lets espeak do what it can and atempo the rest', () => {
    expect(planSpeed(1)).toEqual({ wpm: 175, atempo: [] });
    expect(planSpeed(2)).toEqual({ wpm: 350, atempo: [] });
    expect(planSpeed(0.25)).toEqual({ wpm: 80, atempo: [0.546875] });
    expect(planSpeed(4)).toEqual({ wpm: 450, atempo: [1.555556] });
    expect(planSpeed(0.5).wpm).toBe(88);
  });

  it('always reaches the requested speed overall, with every atempo inside 0.5..2', () => {
    for (let speed = 0.25; speed <= 4; speed += 0.01) {
      const { wpm, atempo } = planSpeed(speed);
      expect(wpm).toBeGreaterThanOrEqual(80);
      expect(wpm).toBeLessThanOrEqual(450);
      const total = (wpm / 175) * atempo.reduce((a, b) => a * b, 1);
      expect(Math.abs(total / speed - 1)).toBeLessThan(0.004);
      for (const factor of atempo) expect(factor >= 0.5 && factor <= 2).toBe(true);
    }
  });
});

describe('prepareInput', () => {
  it('strips control characters but keeps newlines and word breaks', () => {
    expect(prepareInput('a\u0000b\u0007c\r\nd\te\u009Ff\u001Bg\n')).toBe('abc\nd ef' + 'g\n');
  });
  it('rejects empty, whitespace-only, non-string and over-long input with param "input"', () => {
    for (const bad of ['', '   ', '\n\t\u0001', 42, 'x'.repeat(4097)]) {
      expect(() => prepareInput(bad)).toThrow(SpeechInputError);
      try {
        prepareInput(bad);
      } catch (err) {
        expect((err as SpeechInputError).param).toBe('input');
      }
    }
    expect(prepareInput('😀'.repeat(4096))).toHaveLength(8192); // code points, not UTF-16 units
  });
});

describe('argv', () => {
  it('espeak gets text on stdin only, no SSML flag', () => {
    const args = espeakArgs('en-us+f3', 175);
    expect(args).toEqual(['--stdout', '-b', '1', '-v', 'en-us+f3', '-s', '175']);
    expect(args).not.toContain('-m');
  });
  it('ffmpeg reads raw 22050 Hz PCM and writes 24 kHz mono, chaining atempo', () => {
    const args = ffmpegArgs('mp3', [0.5, 0.8]);
    expect(args.join(' ')).toContain('-f s16le -ar 22050 -ac 1 -i pipe:0 -af atempo=0.5,atempo=0.8 -ar 24000 -ac 1');
    expect(args.at(-1)).toBe('pipe:1');
    expect(ffmpegArgs('aac', []).join(' ')).toContain('-c:a aac -b:a 64k -f adts');
  });
});

describe('formats', () => {
  it('maps every format to its content type', () => {
    expect(Object.fromEntries(AUDIO_FORMATS.map((f) => [f, contentTypeFor(f)]))).toEqual({
      mp3: 'audio/mpeg',
      opus: 'audio/opus',
      aac: 'audio/aac',
      flac: 'audio/flac',
      wav: 'audio/wav',
      pcm: 'audio/pcm',
    });
  });
});

describe('wavHeader', () => {
  it('writes a canonical PCM header', () => {
    const h = wavHeader(1000, 24000);
    expect(h.length).toBe(44);
    expect(h.readUInt32LE(4)).toBe(1036);
    expect(h.readUInt16LE(20)).toBe(1);
    expect(h.readUInt16LE(22)).toBe(1);
    expect(h.readUInt32LE(24)).toBe(24000);
    expect(h.readUInt32LE(28)).toBe(48000);
    expect(h.readUInt16LE(32)).toBe(2);
    expect(h.readUInt16LE(34)).toBe(16);
    expect(h.readUInt32LE(40)).toBe(1000);
  });
});

describe('Limiter', () => {
  it('caps concurrency and grants slots first-in first-out', async () => {
    const limiter = new Limiter(2);
    const order: string[] = [];
    const a = await limiter.acquire();
    const b = await limiter.acquire();
    const waiting = ['c', 'd', 'e'].map((name) => limiter.acquire().then((release) => (order.push(name), release)));
    expect(limiter.active).toBe(2);
    expect(limiter.waiting).toBe(3);
    a();
    a(); // a second release of the same slot is ignored
    const c = await waiting[0]!;
    expect(limiter.active).toBe(2);
    b();
    c();
    const [, d, e] = await Promise.all(waiting);
    expect(order).toEqual(['c', 'd', 'e']);
    d!();
    e!();
    expect(limiter.active).toBe(0);
    expect(limiter.waiting).toBe(0);
  });

  it('drops a waiter whose signal aborts', async () => {
    const limiter = new Limiter(1);
    const first = await limiter.acquire();
    const controller = new AbortController();
    const aborted = limiter.acquire(controller.signal);
    const next = limiter.acquire();
    controller.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    expect(limiter.waiting).toBe(1);
    first();
    (await next)();
    expect(limiter.active).toBe(0);
    await expect(limiter.acquire(controller.signal)).rejects.toThrow('gone');
  });
});
