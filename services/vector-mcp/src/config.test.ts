import { describe, expect, it } from 'vitest';
import { DEFAULT_TOOL_FIND_DESCRIPTION, parseConfig, type Config } from './config.ts';

const ok = (env: Record<string, string>): Config => {
  const r = parseConfig(env);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.config;
};
const errors = (env: Record<string, string>): string[] => {
  const r = parseConfig(env);
  if (r.ok) throw new Error('expected a configuration error');
  return r.errors;
};

describe('parseConfig', () => {
  it('has the documented defaults', () => {
    const c = ok({ VECTORDB_API_KEY: 'k' });
    expect(c).toEqual({
      vectordbUrl: 'http://127.0.0.1:6333',
      collection: undefined,
      searchLimit: 10,
      readOnly: false,
      embedding: { provider: 'local', model: 'lexical-hash-v1' },
      toolStoreDescription: 'Keep the memory for later use, when you are asked to remember something.',
      toolFindDescription: DEFAULT_TOOL_FIND_DESCRIPTION,
    });
    expect(c.vectordbApiKey).toBe('k');
  });

  it('keeps the keys out of JSON and object listings', () => {
    const c = ok({
      VECTORDB_API_KEY: 'vector-secret',
      EMBEDDING_PROVIDER: 'openai',
      EMBEDDING_BASE_URL: 'http://127.0.0.1:11434/v1/',
      EMBEDDING_MODEL: 'nomic-embed-text',
      EMBEDDING_API_KEY: 'embedding-secret',
    });
    expect(c.embedding).toEqual({ provider: 'openai', model: 'nomic-embed-text', baseUrl: 'http://127.0.0.1:11434/v1' });
    expect(c.embedding.provider === 'openai' && c.embedding.apiKey).toBe('embedding-secret');
    expect(JSON.stringify(c)).not.toMatch(/secret/);
  });

  it('reads every variable; blank values mean unset', () => {
    const c = ok({
      VECTORDB_API_KEY: ' k ',
      VECTORDB_URL: 'https://vectors.example.test:6333/',
      VECTORDB_COLLECTION: 'memories',
      VECTORDB_SEARCH_LIMIT: ' 25 ',
      VECTORDB_READ_ONLY: 'TRUE',
      EMBEDDING_PROVIDER: '',
      EMBEDDING_MODEL: '',
    });
    expect(c.vectordbApiKey).toBe('k');
    expect(c.vectordbUrl).toBe('https://vectors.example.test:6333');
    expect(c.collection).toBe('memories');
    expect(c.searchLimit).toBe(25);
    expect(c.readOnly).toBe(true);
    expect(c.embedding.provider).toBe('local');
    expect(ok({ VECTORDB_API_KEY: 'k', VECTORDB_URL: '', VECTORDB_SEARCH_LIMIT: ' ', VECTORDB_COLLECTION: '' })).toMatchObject({
      vectordbUrl: 'http://127.0.0.1:6333',
      searchLimit: 10,
      collection: undefined,
    });
    for (const [v, expected] of [['false', false], ['0', false], ['no', false], ['1', true], ['yes', true]] as const) {
      expect(ok({ VECTORDB_API_KEY: 'k', VECTORDB_READ_ONLY: v }).readOnly).toBe(expected);
    }
  });

  it('names the variable in every error', () => {
    expect(errors({})).toEqual([expect.stringMatching(/^VECTORDB_API_KEY is required/)]);
    expect(errors({ VECTORDB_API_KEY: '' })).toEqual([expect.stringMatching(/^VECTORDB_API_KEY is empty/)]);
    expect(errors({ VECTORDB_API_KEY: 'a\nb' })).toEqual([expect.stringMatching(/^VECTORDB_API_KEY: .*control/)]);
    expect(errors({ VECTORDB_API_KEY: 'k', VECTORDB_SEARCH_LIMIT: '1.5' })[0]).toMatch(/^VECTORDB_SEARCH_LIMIT: /);
    expect(errors({ VECTORDB_API_KEY: 'k', VECTORDB_SEARCH_LIMIT: '100000' })[0]).toMatch(/^VECTORDB_SEARCH_LIMIT: /);
    expect(errors({ VECTORDB_API_KEY: 'k', VECTORDB_URL: 'not a url' })[0]).toMatch(/^VECTORDB_URL: /);
    expect(errors({ VECTORDB_API_KEY: 'k', VECTORDB_COLLECTION: 'x'.repeat(256) })[0]).toMatch(/^VECTORDB_COLLECTION: /);
    expect(errors({ VECTORDB_API_KEY: 'k', EMBEDDING_PROVIDER: 'openai' }).sort()).toEqual([
      expect.stringMatching(/^EMBEDDING_BASE_URL: required/),
      expect.stringMatching(/^EMBEDDING_MODEL: required/),
    ]);
    expect(errors({ VECTORDB_API_KEY: 'k', EMBEDDING_MODEL: 'BAAI/bge-small-en-v1.5' })[0]).toMatch(
      /^EMBEDDING_MODEL: the local provider has one model/,
    );
    // Several problems are all reported at once.
    expect(errors({ VECTORDB_SEARCH_LIMIT: 'x', VECTORDB_READ_ONLY: 'x' })).toHaveLength(3);
  });

  it('accepts the local model named explicitly and a vector-name override', () => {
    expect(ok({ VECTORDB_API_KEY: 'k', EMBEDDING_MODEL: 'lexical-hash-v1', EMBEDDING_VECTOR_NAME: 'v' }).embedding).toEqual({
      provider: 'local',
      model: 'lexical-hash-v1',
      vectorName: 'v',
    });
  });
});
