import { describe, expect, it } from 'vitest';
import { parseEngineConfig } from './config.ts';
import { listModels, resolveModel } from './models.ts';

describe('parseEngineConfig', () => {
  it('defaults: no upstreams, 2 × cores, 60 s', () => {
    const config = parseEngineConfig({});
    expect(config.upstreams.size).toBe(0);
    expect(config.maxConcurrency).toBeGreaterThanOrEqual(2);
    expect(config.synthTimeoutMs).toBe(60_000);
  });

  it('reads limits and upstreams; the key stays out of serialised config', () => {
    const key = 'test-only-' + Math.random().toString(36).slice(2);
    const config = parseEngineConfig({
      SPEECH_MAX_CONCURRENCY: '3',
      SPEECH_SYNTH_TIMEOUT_MS: '1500',
      KOKORO_KEY: key,
      // Written as text: a "__proto__" key in JSON must stay an ordinary model id.
      SPEECH_UPSTREAMS: `{
        "kokoro": { "baseUrl": "http://kokoro:8880/v1/", "apiKeyEnv": "KOKORO_KEY", "model": "kokoro", "voices": ["af_heart"] },
        "tts-1-hd": { "baseUrl": "https://tts.example/v1" },
        "__proto__": { "baseUrl": "http://odd-but-harmless/v1" }
      }`,
    });
    expect(config.maxConcurrency).toBe(3);
    expect(config.synthTimeoutMs).toBe(1500);
    const kokoro = config.upstreams.get('kokoro')!;
    expect(kokoro).toMatchObject({ id: 'kokoro', baseUrl: 'http://kokoro:8880/v1', model: 'kokoro', apiKeyEnv: 'KOKORO_KEY', voices: ['af_heart'], timeoutMs: 1500 });
    expect(kokoro.apiKey).toBe(key);
    expect(JSON.stringify([...config.upstreams.values()])).not.toContain(key);
    expect(config.upstreams.get('tts-1-hd')).toMatchObject({ model: 'tts-1-hd' });
    expect(config.upstreams.get('__proto__')).toMatchObject({ baseUrl: 'http://odd-but-harmless/v1' });
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it.each([
    ['bad JSON', { SPEECH_UPSTREAMS: '{nope' }, /SPEECH_UPSTREAMS: not valid JSON/],
    ['array', { SPEECH_UPSTREAMS: '[]' }, /SPEECH_UPSTREAMS: must be a JSON object/],
    ['entry not an object', { SPEECH_UPSTREAMS: '{"a":"http://x/v1"}' }, /SPEECH_UPSTREAMS: model "a": must be an object/],
    ['no baseUrl', { SPEECH_UPSTREAMS: '{"a":{}}' }, /SPEECH_UPSTREAMS: model "a": baseUrl/],
    ['ftp baseUrl', { SPEECH_UPSTREAMS: '{"a":{"baseUrl":"ftp://x/v1"}}' }, /baseUrl must be an http/],
    ['typo field', { SPEECH_UPSTREAMS: '{"a":{"baseUrl":"http://x/v1","apikeyEnv":"K"}}' }, /unknown field\(s\) apikeyEnv/],
    ['key env unset', { SPEECH_UPSTREAMS: '{"a":{"baseUrl":"http://x/v1","apiKeyEnv":"MISSING_KEY"}}' }, /MISSING_KEY, which is not set/],
    ['voices not strings', { SPEECH_UPSTREAMS: '{"a":{"baseUrl":"http://x/v1","voices":[1]}}' }, /voices must be an array/],
    ['empty model', { SPEECH_UPSTREAMS: '{"a":{"baseUrl":"http://x/v1","model":""}}' }, /model must be a non-empty string/],
    ['bad concurrency', { SPEECH_MAX_CONCURRENCY: '0' }, /SPEECH_MAX_CONCURRENCY must be a positive integer/],
    ['bad timeout', { SPEECH_SYNTH_TIMEOUT_MS: '5s' }, /SPEECH_SYNTH_TIMEOUT_MS must be a positive integer/],
  ])('rejects %s', (_name, env, message) => {
    expect(() => parseEngineConfig(env)).toThrow(message);
  });
});

describe('listModels / resolveModel', () => {
  it('lists the built-in espeak models, then upstreams; an upstream may take over a built-in id', () => {
    const config = parseEngineConfig({
      SPEECH_UPSTREAMS: JSON.stringify({ kokoro: { baseUrl: 'http://k/v1' }, 'tts-1-hd': { baseUrl: 'http://k/v1', model: 'kokoro' } }),
    });
    const models = listModels(config);
    expect(models.map((m) => [m.id, m.engine])).toEqual([
      ['tts-1', 'espeak-ng'],
      ['tts-1-hd', 'upstream'],
      ['gpt-4o-mini-tts', 'espeak-ng'],
      ['espeak-ng', 'espeak-ng'],
      ['kokoro', 'upstream'],
    ]);
    for (const model of models) expect(model).toMatchObject({ owned_by: 'gatehouse', created: 1686935002 });
    expect(resolveModel(config, 'tts-1')).toEqual({ engine: 'espeak-ng', id: 'tts-1' });
    expect(resolveModel(config, 'tts-1-hd')).toMatchObject({ engine: 'upstream', upstream: { model: 'kokoro' } });
    expect(resolveModel(config, 'whisper-1')).toBeNull();
    expect(listModels(parseEngineConfig({})).map((m) => m.id)).toEqual(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'espeak-ng']);
  });
});
