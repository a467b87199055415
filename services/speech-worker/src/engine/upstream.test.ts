import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEngineConfig, type UpstreamModel } from './config.ts';
import { collect } from './test-helpers.ts';
import { synthesizeUpstream, UpstreamError } from './upstream.ts';

// A fake OpenAI TTS server: checks the bearer key, records the body, streams audio-ish bytes in pieces.
const key = randomBytes(24).toString('hex');
const received: { path: string; body: Record<string, unknown> }[] = [];
let server: Server;
let baseUrl: string;
let upstream: UpstreamModel;

const sha = (s: string) => createHash('sha256').update(s).digest();

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = await readBody(req);
    if (!timingSafeEqual(sha(req.headers.authorization ?? ''), sha(`Bearer ${key}`))) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
      return;
    }
    if (req.method !== 'POST' || req.url !== '/v1/audio/speech') {
      res.writeHead(404).end();
      return;
    }
    received.push({ path: req.url, body: JSON.parse(body) as Record<string, unknown> });
    if ((JSON.parse(body) as { input: string }).input === 'slow') {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.write(Buffer.alloc(10, 1)); // then never finishes
      return;
    }
    res.writeHead(200, { 'content-type': 'audio/mpeg' });
    for (let i = 0; i < 5; i++) {
      res.write(Buffer.alloc(1000, i));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  upstream = parseEngineConfig({
    FAKE_TTS_KEY: key,
    SPEECH_UPSTREAMS: JSON.stringify({ 'fake-tts': { baseUrl, apiKeyEnv: 'FAKE_TTS_KEY', model: 'upstream-model' } }),
  }).upstreams.get('fake-tts')!;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('synthesizeUpstream', () => {
  it('posts the OpenAI body with the bearer key and streams the audio back', { timeout: 10_000 }, async () => {
    const res = await synthesizeUpstream(upstream, {
      model: 'fake-tts',
      input: 'Hello',
      voice: 'alloy',
      response_format: 'mp3',
      speed: 1.5,
      instructions: 'cheerful',
      stream_format: 'audio',
    } as Parameters<typeof synthesizeUpstream>[1]);
    expect(res.contentType).toBe('audio/mpeg');
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) chunks.push(chunk);
    const audio = Buffer.concat(chunks);
    expect(audio.length).toBe(5000);
    for (let i = 0; i < 5; i++) expect(audio[i * 1000]).toBe(i);
    expect(received.at(-1)).toEqual({
      path: '/v1/audio/speech',
      body: { model: 'upstream-model', input: 'Hello', voice: 'alloy', response_format: 'mp3', speed: 1.5, instructions: 'cheerful' },
    });
  });

  it('a 401 becomes UpstreamError with status 401 and the upstream message', { timeout: 10_000 }, async () => {
    const wrongKey: UpstreamModel = { id: 'fake-tts', baseUrl, model: 'm', apiKey: randomBytes(24).toString('hex') };
    const error = await synthesizeUpstream(wrongKey, { input: 'Hello', voice: 'alloy' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(401);
    expect((error as UpstreamError).message).toContain('Incorrect API key provided.');
    expect((error as UpstreamError).message).not.toContain(wrongKey.apiKey);
    // Without any key configured, too.
    const noKey = await synthesizeUpstream({ id: 'x', baseUrl, model: 'm' }, { input: 'Hello', voice: 'alloy' }).catch((err: unknown) => err);
    expect((noKey as UpstreamError).status).toBe(401);
  });

  it('an unreachable upstream is a 502 UpstreamError', { timeout: 10_000 }, async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await synthesizeUpstream({ id: 'gone', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }, { input: 'x', voice: 'y' }).catch(
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(502);
  });

  it('the caller aborting mid-body rejects with its reason; the time limit gives a 504', { timeout: 10_000 }, async () => {
    const controller = new AbortController();
    const res = await synthesizeUpstream(upstream, { input: 'slow', voice: 'alloy' }, controller.signal);
    const iterator = res.body[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toHaveLength(10);
    setTimeout(() => controller.abort(new Error('client left')), 20);
    await expect(iterator.next()).rejects.toThrow('client left');

    const timed = await synthesizeUpstream({ ...upstream, apiKey: key, timeoutMs: 100 }, { input: 'slow', voice: 'alloy' });
    const error = await collect(timed.body).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(504);
  });
});
