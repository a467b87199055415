import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, type Edge, type Proc } from '../support/local-stack.ts';
import { MODELS as OLLAMA_MODELS, startFakeOllama } from '../../scripts/src/fake-upstreams/ollama.ts';
import { MODELS as OPENAI_MODELS, startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * `GET /api/models` (and `/api/v1/models`) on the chat face: the proxy worker's connections (a fake
 * OpenAI server and a fake Ollama, configured the Open WebUI way) in Open WebUI's order — OpenAI
 * connections, then Ollama, then the arena models from the chat worker's environment — in Open
 * WebUI's shape. The chat worker is restarted with other arena settings to see them apply.
 */
const stack = new Stack();
let edge: Edge;
let chatWorker: Proc;
let oa: FakeUpstream;
let ol: FakeUpstream;
const openaiKey = newKey();
let admin: Account;
let user: Account;
const { call, signup, addUser } = chatClient(() => edge.chatUrl);

async function restartChatWorker(env: Record<string, string>): Promise<void> {
  await chatWorker.stop();
  chatWorker = await stack.startChatWorker(env);
}

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  ol = await startFakeOllama();
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: openaiKey, OLLAMA_BASE_URLS: ol.url });
  chatWorker = await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  user = await addUser(admin, 'User');
});

afterAll(async () => {
  await stack.close();
  await Promise.all([oa?.close(), ol?.close()]);
});

const DEFAULT_ARENA_META = {
  description: 'Submit your questions to anonymous AI chatbots and vote on the best response.',
  model_ids: null,
};

describe('GET /api/models', () => {
  it('lists the OpenAI connection, then Ollama, then the default arena model, in Open WebUI shape', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await call('/api/models', admin);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['data']);
    const data = r.body.data as any[];
    const ids = data.map((m) => m.id);
    expect(ids).toEqual([...OPENAI_MODELS, ...OLLAMA_MODELS.map((m) => `${m}:latest`), 'arena-model']);
    for (const m of data) {
      expect(m.object).toBe('model');
      expect(m.actions).toEqual([]);
      expect(m.filters).toEqual([]);
      expect(Array.isArray(m.tags)).toBe(true);
    }
    const echo = data.find((m) => m.id === 'echo');
    expect(echo).toMatchObject({ name: 'echo', owned_by: 'openai', connection_type: 'external', urlIdx: 0, openai: { id: 'echo' } });
    const local = data.find((m) => m.id === 'echo:latest');
    expect(local).toMatchObject({ name: 'echo:latest', owned_by: 'ollama', connection_type: 'local', ollama: { model: 'echo:latest' } });
    // The arena entry, key for key and in order (profile_image_url is not listed).
    const arena = data.at(-1);
    expect(Object.keys(arena)).toEqual(['id', 'name', 'info', 'object', 'created', 'owned_by', 'arena', 'actions', 'filters', 'tags']);
    expect(arena).toEqual({
      id: 'arena-model',
      name: 'Arena Model',
      info: { meta: DEFAULT_ARENA_META },
      object: 'model',
      created: arena.created,
      owned_by: 'arena',
      arena: true,
      actions: [],
      filters: [],
      tags: [],
    });
    expect(arena.created).toBeGreaterThanOrEqual(before);
  });

  it('answers the same on /api/v1/models, for a plain user too, and with ?refresh=true', async () => {
    const a = await call('/api/models', admin);
    const b = await call('/api/v1/models', user);
    const c = await call('/api/v1/models/?refresh=true', admin);
    expect(b.status).toBe(200);
    expect(c.status).toBe(200);
    expect(b.body.data.map((m: any) => m.id)).toEqual(a.body.data.map((m: any) => m.id));
    expect(c.body.data.map((m: any) => m.id)).toEqual(a.body.data.map((m: any) => m.id));
  });

  it('refuses a request without a session (401, Open WebUI detail)', async () => {
    const r = await call('/api/models', null);
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ detail: 'Not authenticated' });
  });
});

describe('arena models from the chat worker environment', () => {
  it('EVALUATION_ARENA_MODELS replaces the default arena model (meta kept, images not listed)', async () => {
    const arenas = [
      { id: 'duel', name: 'Duel', meta: { profile_image_url: '/duel.png', description: 'Two models', model_ids: ['echo', 'echo:latest'], tags: [{ name: 'eval' }] } },
      { id: 'all-but-echo', name: 'All but echo', meta: { model_ids: ['echo'], filter_mode: 'exclude' } },
    ];
    await restartChatWorker({ EVALUATION_ARENA_MODELS: JSON.stringify(arenas) });
    const data = (await call('/api/models', admin)).body.data as any[];
    expect(data.slice(-2).map((m) => m.id)).toEqual(['duel', 'all-but-echo']);
    expect(data.at(-2)).toMatchObject({
      name: 'Duel',
      info: { meta: { description: 'Two models', model_ids: ['echo', 'echo:latest'], tags: [{ name: 'eval' }] } },
      owned_by: 'arena',
      arena: true,
      tags: [{ name: 'eval' }],
    });
    expect(data.at(-2).info.meta).not.toHaveProperty('profile_image_url');
    expect(data.at(-1)).toMatchObject({ name: 'All but echo', info: { meta: { model_ids: ['echo'], filter_mode: 'exclude' } }, tags: [] });
    expect(data.filter((m) => m.id === 'arena-model')).toEqual([]);
  });

  it('a malformed EVALUATION_ARENA_MODELS falls back to the default arena model', async () => {
    await restartChatWorker({ EVALUATION_ARENA_MODELS: '{"id": "not a list"}' });
    const data = (await call('/api/models', admin)).body.data as any[];
    expect(data.at(-1)).toMatchObject({ id: 'arena-model', info: { meta: DEFAULT_ARENA_META } });
  });

  it('ENABLE_EVALUATION_ARENA_MODELS=false lists no arena model at all', async () => {
    await restartChatWorker({ ENABLE_EVALUATION_ARENA_MODELS: 'false' });
    const data = (await call('/api/models', admin)).body.data as any[];
    expect(data.filter((m) => m.owned_by === 'arena')).toEqual([]);
    expect(data.map((m) => m.id)).toEqual([...OPENAI_MODELS, ...OLLAMA_MODELS.map((m) => `${m}:latest`)]);
  });
});
