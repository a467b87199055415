import { describe, expect, it } from 'vitest';
import { BusError, WorkerUnavailableError } from '@gatehouse/common';
import { speechRefusal, toOpenAIError } from './openai-errors.ts';
import { bearerToken } from '../../kit/credentials.ts';

describe('speech face errors', () => {
  it('maps bus errors to the OpenAI envelope, keeping param and code', () => {
    const e = toOpenAIError(new BusError(400, 'bad voice', { param: 'voice', code: 'invalid_value' }));
    expect(e.status).toBe(400);
    expect(e.body).toEqual({ error: { message: 'bad voice', type: 'invalid_request_error', param: 'voice', code: 'invalid_value' } });
    const down = toOpenAIError(new WorkerUnavailableError('speech.audio.synthesize'));
    expect(down.status).toBe(503);
    expect(down.body.error.type).toBe('server_error');
    expect(down.body.error.code).toBe('service_unavailable');
  });

  it('never turns a client mistake into a 500, nor leaks internals of an unexpected error', () => {
    expect(toOpenAIError(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 })).status).toBe(400);
    const e = toOpenAIError(new Error('secret internal detail'));
    expect(e.status).toBe(500);
    expect(JSON.stringify(e.body)).not.toContain('secret internal detail');
  });

  it('words a missing and a wrong key as OpenAI does, with WWW-Authenticate', () => {
    const missing = speechRefusal({ why: 'unauthorized', presented: false });
    expect(missing.status).toBe(401);
    expect(missing.headers).toEqual({ 'www-authenticate': 'Bearer' });
    expect(JSON.stringify(missing.body)).toMatch(/didn't provide an API key/);
    const wrong = speechRefusal({ why: 'unauthorized', presented: true });
    expect((wrong.body as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect(speechRefusal({ why: 'unavailable', presented: true }).status).toBe(503);
  });

  it('reads only a Bearer credential', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer  abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('Bearer ')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
