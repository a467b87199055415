import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsNamed, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Open WebUI 0.10.2's audio router on the chat face, over real HTTP with real workers: read-aloud
 * through this platform's own speech gateway over the bus (real audio, checked by its container
 * header), also while the speech gate is enforced; the `openai` engines against a local fake
 * speaking OpenAI's speech and transcription formats; the config as admin only; no STT engine;
 * hostile bodies answered 4xx.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
let admin: Account, user: Account;

/** What the fake OpenAI server saw, and its key (made here, never a real one). */
const fakeKey = `sk-test-${randomBytes(8).toString('hex')}`;
const seen: { path: string; auth: string | undefined; body: Buffer }[] = [];
let fake: Server;
let fakeUrl = '';
/** A minimal WAV (44-byte header, 0.1 s of silence at 8 kHz): what the fake "speaks". */
function wav(): Buffer {
  const samples = 800;
  const b = Buffer.alloc(44 + samples * 2);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + samples * 2, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(16000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(samples * 2, 40);
  return b;
}
const readAll = async (req: IncomingMessage): Promise<Buffer> => {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts);
};

async function speak(who: Account | null, body: unknown): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const r = await fetch(`${edge.chatUrl}/api/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(who ? { authorization: `Bearer ${who.token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: r.status, type: r.headers.get('content-type'), bytes: Buffer.from(await r.arrayBuffer()) };
}

async function transcribe(who: Account, bytes: Buffer, type: string, name = 'clip.webm') {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)], { type }), name);
  const r = await fetch(`${edge.chatUrl}/api/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${who.token}` }, body: form });
  return { status: r.status, body: await r.json() };
}

const config = async () => (await call('/api/v1/audio/config', admin)).body;
async function setConfig(edit: (c: any) => void): Promise<any> {
  const c = await config();
  edit(c);
  const r = await call('/api/v1/audio/config/update', admin, 'POST', c);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

beforeAll(async () => {
  fake = createServer(async (req, res) => {
    const body = await readAll(req);
    seen.push({ path: req.url ?? '', auth: req.headers.authorization, body });
    if (req.headers.authorization !== `Bearer ${fakeKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } }));
      return;
    }
    if (req.url === '/v1/audio/speech' && req.method === 'POST') {
      const j = JSON.parse(body.toString());
      if (j.voice === 'nobody') {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: "Voice 'nobody' is not available" } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav());
    } else if (req.url === '/v1/audio/transcriptions' && req.method === 'POST') {
      // The multipart body names the file and carries the model field.
      const text = body.toString('latin1');
      const ok = /name="file"; filename="clip\.webm"/.test(text) && /name="model"\r\n\r\nwhisper-test/.test(text);
      res.writeHead(ok ? 200 : 400, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { text: 'hello from the fake' } : { error: { message: 'bad form' } }));
    } else if (req.url === '/v1/audio/voices') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ voices: [{ id: 'fake-voice', name: 'Fake Voice' }] }));
    } else if (req.url === '/v1/audio/models') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ models: [{ id: 'fake-tts' }] }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  await stack.startWorker();
  await stack.startChatWorker({}, { ingest: false });
  edge = await stack.startEdge({ EDGE_FACES: 'chat,speech' });
  admin = await signup('Admin');
  user = await addUser(admin, 'Reader');
});
afterAll(async () => {
  if (process.env.AUDIO_TEST_LOGS) for (const w of [...stack.workers, ...stack.edges.map((e) => e.proc)]) console.log(w.log().slice(-4000));
  await stack.close();
  await db.end();
  await new Promise((r) => fake.close(r));
});

describe('read-aloud through the own speech gateway (the default engine)', () => {
  it('answers real mp3 audio for a reply, with its content type', async () => {
    const r = await speak(user, { input: 'Hello there, this is a reply read aloud.', voice: 'alloy', response_format: 'mp3' });
    expect(r.status, r.bytes.toString().slice(0, 300)).toBe(200);
    expect(r.type).toBe('audio/mpeg');
    expect(r.bytes.length).toBeGreaterThan(1000);
    // An MP3 frame sync (11 bits set) or an ID3 tag opens the stream.
    const id3 = r.bytes.subarray(0, 3).toString('latin1') === 'ID3';
    const sync = r.bytes[0] === 0xff && (r.bytes[1]! & 0xe0) === 0xe0;
    expect(id3 || sync).toBe(true);
  });

  it('answers WAV and FLAC with their headers; the body model is replaced by the configured one', async () => {
    const w = await speak(user, { model: 'no-such-model', input: 'Two words.', voice: 'alloy', response_format: 'wav' });
    expect(w.status, w.bytes.toString().slice(0, 300)).toBe(200);
    expect(w.type).toBe('audio/wav');
    expect(w.bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(w.bytes.subarray(8, 12).toString('latin1')).toBe('WAVE');
    const f = await speak(user, { input: 'Flac please.', response_format: 'flac' });
    expect(f.status).toBe(200);
    expect(f.bytes.subarray(0, 4).toString('latin1')).toBe('fLaC');
  });

  it('lists the gateway voices and models', async () => {
    const v = await call('/api/v1/audio/voices', user);
    expect(v.status).toBe(200);
    expect(v.body.voices.map((x: any) => x.id)).toContain('alloy');
    for (const x of v.body.voices) expect(Object.keys(x).sort()).toEqual(['id', 'name']);
    const m = await call('/api/v1/audio/models', user);
    expect(m.status).toBe(200);
    expect(m.body.models.map((x: any) => x.id)).toEqual(expect.arrayContaining(['tts-1', 'tts-1-hd']));
  });

  it('answers hostile or malformed bodies with 4xx, never 5xx', async () => {
    const cases: unknown[] = [
      '{not json',
      {},
      { input: '' },
      { input: '   ' },
      { input: 42 },
      { input: 'x'.repeat(5000) },
      { input: 'hi', voice: 'nobody-at-all' },
      { input: 'hi', response_format: 'exe' },
      { input: 'hi', speed: 99 },
      { input: 'hi', speed: 'fast' },
      { input: 'hi', voice: { id: '../../etc/passwd' } },
      [],
      'null',
    ];
    for (const body of cases) {
      const r = await speak(user, body);
      expect(r.status, `${JSON.stringify(body).slice(0, 80)} → ${r.bytes.toString().slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBeLessThan(500);
      expect(JSON.parse(r.bytes.toString()).detail).toBeDefined();
    }
  });

  it('needs a signed-in user', async () => {
    expect((await speak(null, { input: 'hi' })).status).toBe(401);
  });

  it('still reads aloud for a signed-in chat user while the speech gate is enforced', async () => {
    const gateKey = newKey();
    const flipped = await flipGate(await stack.store(), 'speech', enforcedState([gateKey], 'test'));
    expect(flipped.lagging).toEqual([]);
    try {
      // The network face is closed to a caller without the key…
      const face = await fetch(`${edge.url}/v1/audio/speech`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', input: 'hi', voice: 'alloy' }) });
      expect(face.status).toBe(401);
      // …while the chat platform, an internal caller over the bus, still speaks for its user.
      const r = await speak(user, { input: 'Read aloud behind the gate.', voice: 'alloy', response_format: 'wav' });
      expect(r.status).toBe(200);
      expect(r.bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    } finally {
      const back = await flipGate(await stack.store(), 'speech', openState('test'));
      expect(back.lagging).toEqual([]);
    }
  });
});

describe('the admin config', () => {
  it('answers Open WebUI tts and stt sections with their defaults, to admins only', async () => {
    const c = await call('/api/v1/audio/config', admin);
    expect(c.status).toBe(200);
    expect(Object.keys(c.body.tts).sort()).toEqual(['API_KEY', 'AZURE_SPEECH_OUTPUT_FORMAT', 'AZURE_SPEECH_REGION', 'ENGINE', 'MODEL', 'OPENAI_API_BASE_URL', 'OPENAI_API_KEY', 'SPLIT_ON', 'VOICE']);
    expect(Object.keys(c.body.stt).sort()).toEqual(['DEEPGRAM_API_KEY', 'ENGINE', 'MODEL', 'OPENAI_API_BASE_URL', 'OPENAI_API_KEY', 'WHISPER_MODEL']);
    expect(c.body.tts.ENGINE).toBe('gatehouse');
    expect(c.body.tts.VOICE).toBe('alloy');
    expect(c.body.stt.ENGINE).toBe('');
    const u = await call('/api/v1/audio/config', user);
    expect(u).toEqual({ status: 401, body: { detail: PROHIBITED } });
    const up = await call('/api/v1/audio/config/update', user, 'POST', c.body);
    expect(up).toEqual({ status: 401, body: { detail: PROHIBITED } });
  });

  it('refuses a form missing a section with FastAPI 422', async () => {
    const r = await call('/api/v1/audio/config/update', admin, 'POST', { tts: (await config()).tts });
    expect(r.status).toBe(422);
    expect(r.body.detail[0].loc).toEqual(['body', 'stt']);
  });

  it('saves a change, answers it, emits config.updated naming the keys, and keeps it', async () => {
    const after = await setConfig((c) => (c.tts.VOICE = 'echo'));
    expect(after.tts.VOICE).toBe('echo');
    expect((await config()).tts.VOICE).toBe('echo');
    const events = (await eventsNamed(db, 'config.updated')).filter((e) => e.subject.id === 'audio');
    expect(events.at(-1).data.keys).toEqual(['AUDIO_TTS_VOICE']);
    await setConfig((c) => (c.tts.VOICE = 'alloy'));
  });
});

describe('no speech-to-text engine', () => {
  it('answers Open WebUI 400 naming it', async () => {
    const r = await transcribe(user, randomBytes(2000), 'audio/webm');
    expect(r.status).toBe(400);
    expect(r.body.detail).toMatch(/^\[ERROR: No speech-to-text engine is configured/);
  });

  it('refuses a file that is not audio, and a form without its file', async () => {
    const r = await transcribe(user, Buffer.from('plain text'), 'text/plain', 'notes.txt');
    expect(r.status).toBe(400);
    expect(r.body.detail).toMatch(/not supported/);
    const none = await fetch(`${edge.chatUrl}/api/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${user.token}` }, body: new FormData() });
    expect(none.status).toBe(422);
  });
});

describe('the openai engines against a local fake', () => {
  beforeAll(async () => {
    await setConfig((c) => {
      Object.assign(c.tts, { ENGINE: 'openai', OPENAI_API_BASE_URL: fakeUrl, OPENAI_API_KEY: fakeKey, MODEL: 'fake-tts' });
      Object.assign(c.stt, { ENGINE: 'openai', OPENAI_API_BASE_URL: fakeUrl, OPENAI_API_KEY: fakeKey, MODEL: 'whisper-test' });
    });
  });
  afterAll(async () => {
    await setConfig((c) => {
      c.tts.ENGINE = 'gatehouse';
      c.tts.MODEL = 'tts-1';
      c.stt.ENGINE = '';
    });
  });

  it('speaks through the configured server with its key and model', async () => {
    seen.length = 0;
    const r = await speak(user, { model: 'ignored', input: 'From the fake.', voice: 'fake-voice' });
    expect(r.status).toBe(200);
    expect(r.type).toBe('audio/wav');
    expect(r.bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    const req = seen.find((s) => s.path === '/v1/audio/speech')!;
    expect(req.auth).toBe(`Bearer ${fakeKey}`);
    expect(JSON.parse(req.body.toString())).toMatchObject({ model: 'fake-tts', input: 'From the fake.', voice: 'fake-voice' });
  });

  it("answers the server's refusal as Open WebUI's External: detail, 4xx", async () => {
    const r = await speak(user, { input: 'hi', voice: 'nobody' });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.bytes.toString()).detail).toBe("External: Voice 'nobody' is not available");
  });

  it("lists the server's voices and models", async () => {
    expect((await call('/api/v1/audio/voices', user)).body).toEqual({ voices: [{ id: 'fake-voice', name: 'Fake Voice' }] });
    expect((await call('/api/v1/audio/models', user)).body).toEqual({ models: [{ id: 'fake-tts' }] });
  });

  it('transcribes a recording through the configured server', async () => {
    const r = await transcribe(user, randomBytes(3000), 'audio/webm;codecs=opus');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.text).toBe('hello from the fake');
    const req = seen.find((s) => s.path === '/v1/audio/transcriptions')!;
    expect(req.auth).toBe(`Bearer ${fakeKey}`);
  });

  it('answers a wrong key at the server as a 400 with its reason', async () => {
    await setConfig((c) => (c.stt.OPENAI_API_KEY = 'sk-wrong'));
    const r = await transcribe(user, randomBytes(100), 'audio/webm');
    expect(r.status).toBe(400);
    expect(r.body.detail).toMatch(/Incorrect API key provided/);
    await setConfig((c) => (c.stt.OPENAI_API_KEY = fakeKey));
  });
});
