import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConnectionsConfig } from './config.ts';
import { connectionsView } from './view.ts';

describe('connectionsView', () => {
  it('lists every connection with its settings, and whether a key is set, never the key or headers', () => {
    const key = randomBytes(16).toString('hex');
    const secretHeader = randomBytes(8).toString('hex');
    const view = connectionsView(
      loadConnectionsConfig({
        OPENAI_API_BASE_URLS: 'http://127.0.0.1:9001/v1;http://127.0.0.1:9002/v1',
        OPENAI_API_KEYS: `${key};`,
        OPENAI_API_CONFIGS: JSON.stringify({ '1': { prefix_id: 'b', tags: ['x'], auth_type: 'none', headers: { 'x-team': secretHeader } } }),
        OLLAMA_BASE_URLS: 'http://127.0.0.1:11434',
        OLLAMA_API_CONFIGS: JSON.stringify({ '0': { enable: false, model_ids: ['qwen3:8b'] } }),
      }),
    );
    expect(view).toEqual({
      openai: {
        enabled: true,
        connections: [
          { idx: 0, url: 'http://127.0.0.1:9001/v1', enable: true, prefix_id: null, model_ids: [], tags: [], connection_type: 'external', auth_type: 'bearer', key_set: true },
          { idx: 1, url: 'http://127.0.0.1:9002/v1', enable: true, prefix_id: 'b', model_ids: [], tags: [{ name: 'x' }], connection_type: 'external', auth_type: 'none', key_set: false },
        ],
      },
      ollama: {
        enabled: true,
        connections: [{ idx: 0, url: 'http://127.0.0.1:11434', enable: false, prefix_id: null, model_ids: ['qwen3:8b'], tags: [], connection_type: 'local', key_set: false }],
      },
    });
    const text = JSON.stringify(view);
    expect(text).not.toContain(key);
    expect(text).not.toContain(secretHeader);
  });
});
