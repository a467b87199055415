import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOllama } from '../../scripts/src/fake-upstreams/ollama.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * The admin's read-only view of the model connections: `GET /openai/config` and `GET /ollama/config`
 * in Open WebUI's shape, answered from the proxy worker's registry — every configured connection
 * with its settings and whether a key is set, never the key itself or a configured header.
 */
const stack = new Stack();
let edge: Edge;
let oa: FakeUpstream;
let ol: FakeUpstream;
const openaiKey = newKey();
const ollamaKey = newKey();
const headerSecret = newKey();
let admin: Account;
let user: Account;
const { call, signup, addUser } = chatClient(() => edge.chatUrl);

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  ol = await startFakeOllama();
  await stack.startProxyWorker({
    // A second OpenAI connection without a key, switched off, with a prefix and a header.
    OPENAI_API_BASE_URLS: `${oa.url};http://127.0.0.1:9/v1`,
    OPENAI_API_KEYS: `${openaiKey};`,
    OPENAI_API_CONFIGS: JSON.stringify({ '1': { enable: false, prefix_id: 'spare', auth_type: 'none', headers: { 'x-team-token': headerSecret } } }),
    OLLAMA_BASE_URLS: ol.url,
    OLLAMA_API_CONFIGS: JSON.stringify({ '0': { key: ollamaKey, tags: ['local'] } }),
  });
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  user = await addUser(admin, 'User');
});

afterAll(async () => {
  await stack.close();
  await Promise.all([oa?.close(), ol?.close()]);
});

describe('GET /openai/config and /ollama/config', () => {
  it('list the OpenAI connections in Open WebUI’s shape, keys withheld, key_set saying whether one is set', async () => {
    const r = await call('/openai/config', admin);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      ENABLE_OPENAI_API: true,
      OPENAI_API_BASE_URLS: [oa.url, 'http://127.0.0.1:9/v1'],
      OPENAI_API_KEYS: ['', ''],
      OPENAI_API_CONFIGS: {
        '0': { enable: true, prefix_id: null, model_ids: [], tags: [], connection_type: 'external', auth_type: 'bearer', key_set: true },
        '1': { enable: false, prefix_id: 'spare', model_ids: [], tags: [], connection_type: 'external', auth_type: 'none', key_set: false },
      },
    });
    expect(JSON.stringify(r.body)).not.toContain(openaiKey);
    expect(JSON.stringify(r.body)).not.toContain(headerSecret);
  });

  it('list the Ollama connections, the per-connection key only as key_set', async () => {
    const r = await call('/ollama/config', admin);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      ENABLE_OLLAMA_API: true,
      OLLAMA_BASE_URLS: [ol.url],
      OLLAMA_API_CONFIGS: { '0': { enable: true, prefix_id: null, model_ids: [], tags: [{ name: 'local' }], connection_type: 'local', key_set: true } },
    });
    expect(JSON.stringify(r.body)).not.toContain(ollamaKey);
  });

  it('are for admins only: a user gets 401 as from Open WebUI’s get_admin_user, no session 401', async () => {
    for (const path of ['/openai/config', '/ollama/config']) {
      const r = await call(path, user);
      expect(r.status, path).toBe(401);
      expect(r.body).toEqual({ detail: PROHIBITED });
      const anon = await call(path, null);
      expect(anon.status, path).toBe(401);
    }
  });
});
