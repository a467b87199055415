import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { opusInputSampleRate, probe, SENTENCE_200, textOfLength } from '../../services/speech-worker/src/engine/test-helpers.ts';

/**
 * The speech API end to end: HTTP → edge → NATS → speech worker (espeak-ng + ffmpeg) → back, with
 * the audio checked by ffprobe/ffmpeg. The gate stays open (its own tests are speech-gate.test.ts).
 */
const run = promisify(execFile);
const stack = new Stack();
let edge: Edge;

beforeAll(async () => {
  await stack.startWorker();
  edge = await stack.startEdge();
});
afterAll(() => stack.close());

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

interface Answer {
  status: number;
  type: string | null;
  body: Buffer;
}

/** One HTTP request, bounded in time (the timeout covers reading the body too). */
async function call(
  path: string,
  opts: { method?: string; json?: unknown; raw?: string; contentType?: string; timeoutMs?: number; base?: string } = {},
): Promise<Answer> {
  const hasBody = opts.json !== undefined || opts.raw !== undefined;
  const res = await fetch(`${opts.base ?? edge.url}${path}`, {
    method: opts.method ?? (hasBody ? 'POST' : 'GET'),
    headers: hasBody ? { 'content-type': opts.contentType ?? 'application/json' } : {},
    body: opts.raw ?? (opts.json === undefined ? undefined : JSON.stringify(opts.json)),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
  });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type'), body };
}

const speech = (json: unknown, timeoutMs?: number) => call('/v1/audio/speech', { json, timeoutMs });

/** The body as OpenAI's error envelope, checked for shape. */
function envelope(a: Answer): { message: string; type: string; param: string | null; code: string | null } {
  expect(a.type).toMatch(/^application\/json/);
  const parsed = JSON.parse(a.body.toString('utf8')) as { error: { message: string; type: string; param: string | null; code: string | null } };
  expect(Object.keys(parsed)).toEqual(['error']);
  const e = parsed.error;
  expect(typeof e.message).toBe('string');
  expect(e.message.length).toBeGreaterThan(0);
  expect(typeof e.type).toBe('string');
  expect(e.param === null || typeof e.param === 'string').toBe(true);
  expect(e.code === null || typeof e.code === 'string').toBe(true);
  return e;
}

/** Child processes (espeak-ng, ffmpeg) of the worker process: `pgrep -P` sees only this worker's. */
async function childrenOf(pid: number): Promise<string[]> {
  try {
    const { stdout } = await run('pgrep', ['-l', '-P', String(pid)], { timeout: 5000 });
    // Only the synthesis children count: tsx's esbuild service is a child of the worker too.
    return stdout.trim().split('\n').filter((l) => /espeak|ffmpeg/.test(l));
  } catch (err) {
    if ((err as { code?: number }).code === 1) return []; // pgrep: nothing matched
    throw err;
  }
}

const BASE = { model: 'tts-1', voice: 'alloy', input: SENTENCE_200 };

describe('response formats', () => {
  const FORMATS = [
    { format: 'mp3', contentType: 'audio/mpeg', codec: 'mp3' },
    { format: 'opus', contentType: 'audio/opus', codec: 'opus' },
    { format: 'aac', contentType: 'audio/aac', codec: 'aac' },
    { format: 'flac', contentType: 'audio/flac', codec: 'flac' },
    { format: 'wav', contentType: 'audio/wav', codec: 'pcm_s16le' },
    { format: 'pcm', contentType: 'audio/pcm', codec: 'pcm_s16le' },
  ] as const;

  it.each(FORMATS)('$format: 200, $contentType, decodes as 24 kHz mono of a sane length', async ({ format, contentType, codec }) => {
    expect(SENTENCE_200.length).toBe(200);
    const a = await speech({ ...BASE, response_format: format });
    expect(a.status, a.body.toString().slice(0, 300)).toBe(200);
    expect(a.type).toBe(contentType);
    const p = await probe(a.body, format);
    expect(p.codec).toBe(codec);
    expect(p.channels).toBe(1);
    if (format === 'opus') {
      // Opus always decodes at 48 kHz; the stream's own rate is the OpusHead "input sample rate".
      expect(p.sampleRate).toBe(48000);
      expect(opusInputSampleRate(a.body)).toBe(24000);
    } else {
      expect(p.sampleRate).toBe(24000);
    }
    // 200 characters at speed 1: about 10-12 s of speech.
    expect(p.decodedSeconds).toBeGreaterThan(6);
    expect(p.decodedSeconds).toBeLessThan(20);
    if (p.duration !== undefined) {
      expect(p.duration).toBeGreaterThan(6);
      expect(p.duration).toBeLessThan(20);
    }
    if (format === 'pcm') {
      expect(a.body.byteLength % 2).toBe(0);
      expect(Math.abs(a.body.byteLength - p.decodedSeconds * 24000 * 2)).toBeLessThanOrEqual(0.05 * 24000 * 2);
      if (p.duration !== undefined) expect(Math.abs(a.body.byteLength - p.duration * 24000 * 2)).toBeLessThanOrEqual(0.05 * 24000 * 2);
    }
    if (format === 'flac') {
      // STREAMINFO carries the real number of samples, so ffprobe (and players) read the duration.
      expect(p.duration).toBeDefined();
      expect(Math.abs(p.duration! - p.decodedSeconds)).toBeLessThan(0.01);
    }
    if (format === 'wav') {
      expect(a.body.subarray(0, 4).toString('latin1')).toBe('RIFF');
      expect(a.body.subarray(8, 12).toString('latin1')).toBe('WAVE');
      expect(a.body.readUInt32LE(4)).toBe(a.body.byteLength - 8);
      expect(a.body.subarray(36, 40).toString('latin1')).toBe('data');
      expect(a.body.readUInt32LE(40)).toBe(a.body.byteLength - 44);
    }
  });

  it('defaults to mp3 when response_format is left out', async () => {
    const a = await speech(BASE);
    expect(a.status).toBe(200);
    expect(a.type).toBe('audio/mpeg');
    expect((await probe(a.body, 'mp3')).codec).toBe('mp3');
  });
});

describe('streaming', () => {
  it('sends a long mp3 in more than one chunk, the first before the last', async () => {
    const input = textOfLength(3000);
    const res = await fetch(`${edge.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...BASE, input, response_format: 'mp3' }),
      signal: AbortSignal.timeout(60_000),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    const arrivals: number[] = [];
    // Bounded: the fetch timeout ends the read, and the count is capped.
    for (let i = 0; i < 100_000; i++) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      arrivals.push(performance.now());
    }
    expect(chunks.length).toBeGreaterThan(1);
    // Order only, no thresholds: the first chunk was in hand before the last one came.
    expect(arrivals[0]!).toBeLessThan(arrivals.at(-1)!);
    const audio = Buffer.concat(chunks);
    const p = await probe(audio, 'mp3');
    expect(p.sampleRate).toBe(24000);
    expect(p.decodedSeconds).toBeGreaterThan(100); // 3000 chars ≈ 15× the 200-char sentence
  });

  it('stream_format sse (gpt-4o-mini-tts): speech.audio.delta events then one speech.audio.done with usage', async () => {
    const a = await speech({ ...BASE, model: 'gpt-4o-mini-tts', input: textOfLength(1500), response_format: 'mp3', stream_format: 'sse' });
    expect(a.status, a.body.toString().slice(0, 300)).toBe(200);
    expect(a.type).toMatch(/^text\/event-stream/);
    const text = a.body.toString('utf8');
    expect(text.endsWith('\n\n')).toBe(true);
    const events = text
      .split('\n\n')
      .filter((block) => block.length > 0)
      .map((block) => {
        expect(block.startsWith('data: ')).toBe(true);
        return JSON.parse(block.slice('data: '.length)) as { type: string; audio?: string; usage?: Record<string, unknown> };
      });
    expect(events.length).toBeGreaterThan(1);
    const done = events.at(-1)!;
    const deltas = events.slice(0, -1);
    expect(done.type).toBe('speech.audio.done');
    expect(events.filter((e) => e.type === 'speech.audio.done')).toHaveLength(1);
    for (const d of deltas) {
      expect(d.type).toBe('speech.audio.delta');
      expect(d.audio).toMatch(/^[A-Za-z0-9+/]+=*$/);
    }
    const usage = done.usage!;
    for (const k of ['input_tokens', 'output_tokens', 'total_tokens']) {
      expect(Number.isInteger(usage[k]), k).toBe(true);
      expect(usage[k] as number).toBeGreaterThanOrEqual(0);
    }
    const audio = Buffer.concat(deltas.map((d) => Buffer.from(d.audio!, 'base64')));
    const p = await probe(audio, 'mp3');
    expect(p.codec).toBe('mp3');
    expect(p.sampleRate).toBe(24000);
  });

  it('sse with a wav body decodes as wav', async () => {
    const a = await speech({ ...BASE, model: 'gpt-4o-mini-tts', response_format: 'wav', stream_format: 'sse' });
    expect(a.status).toBe(200);
    const events = a.body
      .toString('utf8')
      .split('\n\n')
      .filter(Boolean)
      .map((b) => JSON.parse(b.slice(6)) as { type: string; audio?: string });
    const audio = Buffer.concat(events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio!, 'base64')));
    expect(audio.readUInt32LE(4)).toBe(audio.byteLength - 8);
    expect((await probe(audio, 'wav')).sampleRate).toBe(24000);
  });

  it('refuses stream_format sse with tts-1 (400, param stream_format)', async () => {
    for (const model of ['tts-1', 'tts-1-hd']) {
      const a = await speech({ ...BASE, model, stream_format: 'sse' });
      expect(a.status, model).toBe(400);
      const e = envelope(a);
      expect(e.type).toBe('invalid_request_error');
      expect(e.param).toBe('stream_format');
    }
  });
});

describe('speed', () => {
  it('speed 2.0 gives a wav at most 0.6× as long as speed 1.0', async () => {
    const [normal, fast] = await Promise.all([
      speech({ ...BASE, response_format: 'wav', speed: 1 }),
      speech({ ...BASE, response_format: 'wav', speed: 2 }),
    ]);
    expect(normal.status).toBe(200);
    expect(fast.status).toBe(200);
    const [pn, pf] = await Promise.all([probe(normal.body, 'wav'), probe(fast.body, 'wav')]);
    expect(pf.decodedSeconds).toBeLessThanOrEqual(0.6 * pn.decodedSeconds);
    expect(pf.decodedSeconds).toBeGreaterThan(0.3 * pn.decodedSeconds);
  });
});

describe('voices', () => {
  const OPENAI = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse'];

  it('GET /v1/audio/voices lists the 11 OpenAI voices as {id, name} and more than 50 voices', async () => {
    const a = await call('/v1/audio/voices');
    expect(a.status).toBe(200);
    const { voices } = JSON.parse(a.body.toString()) as { voices: { id: string; name: string }[] };
    expect(voices.length).toBeGreaterThan(50);
    for (const v of voices) {
      expect(typeof v.id).toBe('string');
      expect(typeof v.name).toBe('string');
    }
    const ids = voices.map((v) => v.id);
    for (const id of OPENAI) expect(ids, id).toContain(id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('two OpenAI voices give different audio for the same text', async () => {
    const [alloy, nova] = await Promise.all([
      speech({ ...BASE, voice: 'alloy', response_format: 'wav' }),
      speech({ ...BASE, voice: 'nova', response_format: 'wav' }),
    ]);
    expect(alloy.status).toBe(200);
    expect(nova.status).toBe(200);
    expect(sha(alloy.body)).not.toBe(sha(nova.body));
  });

  it('the voice object form {id} works', async () => {
    const a = await speech({ ...BASE, voice: { id: 'echo' }, response_format: 'wav' });
    expect(a.status).toBe(200);
    expect(a.body.subarray(0, 4).toString('latin1')).toBe('RIFF');
  });

  it('an espeak voice id (de) works', async () => {
    const a = await speech({ ...BASE, voice: 'de', input: 'Guten Morgen, wie geht es dir heute? Das Wetter ist schön.', response_format: 'wav' });
    expect(a.status, a.body.toString().slice(0, 300)).toBe(200);
    const p = await probe(a.body, 'wav');
    expect(p.sampleRate).toBe(24000);
    expect(p.decodedSeconds).toBeGreaterThan(1);
  });
});

describe('models', () => {
  it('GET /v1/models lists tts-1, tts-1-hd and gpt-4o-mini-tts as OpenAI models', async () => {
    const a = await call('/v1/models');
    expect(a.status).toBe(200);
    const list = JSON.parse(a.body.toString()) as { object: string; data: { id: string; object: string; created: number; owned_by: string }[] };
    expect(list.object).toBe('list');
    const ids = list.data.map((m) => m.id);
    for (const id of ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']) expect(ids).toContain(id);
    for (const m of list.data) {
      expect(m.object).toBe('model');
      expect(Number.isInteger(m.created)).toBe(true);
      expect(typeof m.owned_by).toBe('string');
    }
  });

  it('GET /v1/models/tts-1 returns the model', async () => {
    const a = await call('/v1/models/tts-1');
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body.toString())).toMatchObject({ id: 'tts-1', object: 'model' });
  });

  it('GET /v1/models/nope is a 404 in the OpenAI envelope', async () => {
    const a = await call('/v1/models/nope');
    expect(a.status).toBe(404);
    const e = envelope(a);
    expect(e.type).toBe('invalid_request_error');
    expect(e.message).toMatch(/nope/);
  });
});

describe('bad input: 400 with OpenAI envelope, never 500, never hangs', () => {
  const cases: { name: string; body: unknown; param: string | null; code?: string }[] = [
    { name: 'unknown voice', body: { ...BASE, voice: 'no-such-voice' }, param: 'voice' },
    { name: 'unknown voice in the object form', body: { ...BASE, voice: { id: 'no-such-voice' } }, param: 'voice' },
    { name: 'unknown voice variant', body: { ...BASE, voice: 'en-us+nosuchvariant' }, param: 'voice' },
    { name: 'unknown response_format', body: { ...BASE, response_format: 'ogg' }, param: 'response_format' },
    { name: 'empty input', body: { ...BASE, input: '' }, param: 'input' },
    { name: 'whitespace-only input', body: { ...BASE, input: ' \n\t  \r\n ' }, param: 'input' },
    { name: '4097-char input', body: { ...BASE, input: textOfLength(4097) }, param: 'input', code: 'string_above_max_length' },
    // Passes the edge's schema; the worker's engine finds nothing to speak (its first step, before meta).
    { name: 'control characters only', body: { ...BASE, input: '\u0001\u0002\u0007' }, param: 'input' },
    { name: '4097-char instructions', body: { ...BASE, model: 'gpt-4o-mini-tts', instructions: textOfLength(4097) }, param: 'instructions' },
    { name: 'speed 0.1', body: { ...BASE, speed: 0.1 }, param: 'speed' },
    { name: 'speed 5', body: { ...BASE, speed: 5 }, param: 'speed' },
    { name: 'speed "fast"', body: { ...BASE, speed: 'fast' }, param: 'speed' },
    { name: 'missing model', body: { voice: 'alloy', input: 'hello' }, param: 'model' },
    { name: 'unknown model', body: { ...BASE, model: 'tts-9000' }, param: 'model' },
    { name: 'missing input', body: { model: 'tts-1', voice: 'alloy' }, param: 'input' },
    { name: 'missing voice', body: { model: 'tts-1', input: 'hello' }, param: 'voice' },
    { name: 'unknown stream_format', body: { ...BASE, stream_format: 'ws' }, param: 'stream_format' },
    { name: 'a JSON array body', body: [BASE], param: null },
    { name: 'a JSON string body', body: 'hello', param: null },
    { name: 'a JSON null body', body: null, param: null },
  ];

  it.each(cases)('$name → 400, param $param', async ({ body, param, code }) => {
    const a = await speech(body, 10_000);
    expect(a.status, a.body.toString()).toBe(400);
    const e = envelope(a);
    expect(e.type).toBe('invalid_request_error');
    expect(e.param).toBe(param);
    if (code) expect(e.code).toBe(code);
  });

  it('4096 characters exactly is accepted', async () => {
    // Only the status: the length limit is inclusive. (pcm is the cheapest format to produce.)
    const a = await speech({ ...BASE, input: textOfLength(4096), response_format: 'pcm', speed: 4 }, 60_000);
    expect(a.status).toBe(200);
  });

  // zod's .max counts UTF-16 units; OpenAI (and the engine's text.ts) count code points.
  it('counts the input length in characters (code points), as OpenAI does', async () => {
    const input = 'a \u{1D400} '.repeat(1000); // 4000 code points, 5000 UTF-16 units
    expect([...input].length).toBe(4000);
    const a = await speech({ ...BASE, input, response_format: 'pcm', speed: 4 }, 60_000);
    expect(a.status, a.body.toString().slice(0, 300)).toBe(200);
  });

  it('a broken JSON body → 400 in the envelope', async () => {
    const a = await call('/v1/audio/speech', { raw: '{"model": "tts-1", "input": ', timeoutMs: 10_000 });
    expect(a.status).toBe(400);
    expect(envelope(a).type).toBe('invalid_request_error');
  });

  it('an empty body with a JSON content type → 400 in the envelope', async () => {
    const a = await call('/v1/audio/speech', { raw: '', timeoutMs: 10_000 });
    expect(a.status).toBe(400);
    expect(envelope(a).type).toBe('invalid_request_error');
  });

  it('a non-JSON content type is refused in the envelope (text/plain 400, form 415), never 500', async () => {
    const plain = await call('/v1/audio/speech', { raw: JSON.stringify(BASE), contentType: 'text/plain', timeoutMs: 10_000 });
    expect(plain.status).toBe(400);
    expect(envelope(plain).type).toBe('invalid_request_error');

    // No parser for forms: the edge answers 415 Unsupported Media Type on purpose (openai-errors.ts).
    const form = await call('/v1/audio/speech', { raw: 'model=tts-1&voice=alloy&input=hi', contentType: 'application/x-www-form-urlencoded', timeoutMs: 10_000 });
    expect(form.status).toBe(415);
    expect(envelope(form).type).toBe('invalid_request_error');
  });

  it('the service still works after all that', async () => {
    const a = await speech({ ...BASE, response_format: 'wav' });
    expect(a.status).toBe(200);
  });
});

describe('concurrency', () => {
  it('eight requests at once all succeed with valid audio', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => speech({ ...BASE, input: `Request number ${i}. ${SENTENCE_200}`, response_format: 'mp3' }, 60_000)),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const probes = await Promise.all(answers.map((a) => probe(a.body, 'mp3')));
    for (const p of probes) expect(p.decodedSeconds).toBeGreaterThan(6);
  });
});

describe('client disconnect', () => {
  it('aborting a long synthesis mid-stream leaves the worker healthy and kills its espeak-ng/ffmpeg', async () => {
    const worker = stack.workers[0]!;
    const pid = worker.child.pid!;
    // The worker's warm pool keeps started processes waiting for requests; they are not this request's.
    const idle = await childrenOf(pid);

    let mine: string[] = [];
    const ac = new AbortController();
    const timeout = setTimeout(() => ac.abort(new Error('test timeout')), 60_000);
    try {
      const res = await fetch(`${edge.url}/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...BASE, input: textOfLength(4096), speed: 0.25, response_format: 'mp3' }),
        signal: ac.signal,
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const first = await reader.read();
      expect(first.done).toBe(false);
      expect(first.value!.byteLength).toBeGreaterThan(0);
      // ~15 minutes of audio to encode: the pipeline is surely still running now.
      const during = (await childrenOf(pid)).filter((child) => !idle.includes(child));
      expect(during.join(' ')).toMatch(/ffmpeg/);
      mine = during;
      ac.abort();
      await reader.read().catch(() => undefined);
    } finally {
      clearTimeout(timeout);
    }

    // The edge cancels the bus stream, the worker aborts the synthesis and reaps both children.
    let left: string[] = [];
    await waitFor(
      async () => {
        left = (await childrenOf(pid)).filter((child) => mine.includes(child));
        return left.length === 0;
      },
      5000,
      () => `worker children still running after the client went away: ${left.join(', ')}`,
    );

    expect(worker.running).toBe(true);
    const again = await speech({ ...BASE, response_format: 'wav' });
    expect(again.status).toBe(200);
    expect(again.body.readUInt32LE(4)).toBe(again.body.byteLength - 8);
  });
});

describe('worker down', () => {
  const down = new Stack();
  let downEdge: Edge;
  beforeAll(async () => {
    downEdge = await down.startEdge();
  });
  afterAll(() => down.close());

  /**
   * 503 in the envelope, and for the right reason: NATS said "no responders", so the missing worker
   * is reported at once, not after the request hung until the edge's idle timeout (that would be
   * another error: a worker timeout).
   */
  async function expectWorkerUnavailable(): Promise<void> {
    const models = await call('/v1/models', { base: downEdge.url, timeoutMs: 10_000 });
    expect(models.status).toBe(503);
    expect(envelope(models)).toMatchObject({ type: 'server_error', code: 'service_unavailable', message: expect.stringMatching(/^no worker is serving speech\.models\.list/) });

    const s = await call('/v1/audio/speech', { base: downEdge.url, json: BASE, timeoutMs: 10_000 });
    expect(s.status).toBe(503);
    expect(envelope(s)).toMatchObject({ type: 'server_error', code: 'service_unavailable', message: expect.stringMatching(/^no worker is serving speech\.audio\.synthesize/) });

    const h = await call('/health', { base: downEdge.url, timeoutMs: 5000 });
    expect(h.status).toBe(200);

    // A client mistake the edge can see by itself is still a 400, worker or not.
    const bad = await call('/v1/audio/speech', { base: downEdge.url, json: { ...BASE, speed: 9 }, timeoutMs: 10_000 });
    expect(bad.status).toBe(400);
    expect(envelope(bad).param).toBe('speed');
  }

  it('no worker ever started: /v1/models and /v1/audio/speech answer 503 fast, /health still answers', async () => {
    await expectWorkerUnavailable();
  });

  it('a worker that was stopped: the same', async () => {
    const w = await down.startWorker();
    expect((await call('/v1/models', { base: downEdge.url, timeoutMs: 10_000 })).status).toBe(200);
    await w.stop();
    await expectWorkerUnavailable();
  });
});
