import { describe, expect, it } from 'vitest';
import { anthropicError, anthropicErrorType, openAIErrorToAnthropic } from './errors.ts';
import { estimateInputTokens, estimateTokens, IMAGE_TOKENS } from './tokens.ts';
import { AnthropicMessagesRequest } from '@gatehouse/contracts';

describe('anthropicErrorType', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [402, 'billing_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [408, 'timeout_error'],
    [409, 'invalid_request_error'],
    [413, 'request_too_large'],
    [422, 'invalid_request_error'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [501, 'api_error'],
    [502, 'api_error'],
    [503, 'overloaded_error'],
    [504, 'timeout_error'],
    [529, 'overloaded_error'],
    [599, 'api_error'],
    [200, 'api_error'],
  ])('%i → %s', (status, type) => {
    expect(anthropicErrorType(status)).toBe(type);
  });
});

describe('anthropicError', () => {
  it('envelope, request_id only when given', () => {
    expect(anthropicError(404, 'model: foo')).toEqual({ type: 'error', error: { type: 'not_found_error', message: 'model: foo' } });
    expect(anthropicError(429, 'slow down', 'req_1')).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
      request_id: 'req_1',
    });
  });
});

describe('openAIErrorToAnthropic', () => {
  it.each([
    [
      401,
      { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
      { type: 'authentication_error', message: 'Incorrect API key provided' },
    ],
    [404, { error: { message: 'model "llama9" not found, try pulling it first', type: 'api_error' } }, { type: 'not_found_error', message: 'model "llama9" not found, try pulling it first' }],
    [500, { error: 'llama runner process has terminated' }, { type: 'api_error', message: 'llama runner process has terminated' }],
    [422, { detail: 'Field required' }, { type: 'invalid_request_error', message: 'Field required' }],
    [400, { object: 'error', message: 'maximum context length is 8192 tokens', code: 400 }, { type: 'invalid_request_error', message: 'maximum context length is 8192 tokens' }],
    [429, '{"error":{"message":"Rate limit reached"}}', { type: 'rate_limit_error', message: 'Rate limit reached' }],
    [502, '<html>Bad Gateway</html>\n', { type: 'api_error', message: '<html>Bad Gateway</html>' }],
    [503, '', { type: 'overloaded_error', message: 'Upstream returned HTTP 503' }],
    [500, null, { type: 'api_error', message: 'Upstream returned HTTP 500' }],
    [400, [{ error: { message: 'bad' } }], { type: 'invalid_request_error', message: 'bad' }],
    [400, { error: {} }, { type: 'invalid_request_error', message: 'Upstream returned HTTP 400' }],
  ])('%i %j', (status, body, error) => {
    expect(openAIErrorToAnthropic(status, body)).toEqual({ type: 'error', error });
  });

  it('long messages are cut, request id kept', () => {
    const e = openAIErrorToAnthropic(500, 'x'.repeat(5000), 'req_9');
    expect(e.error.message).toHaveLength(2001);
    expect(e.request_id).toBe('req_9');
  });
});

describe('token estimates', () => {
  it('estimateTokens: ~4 ASCII chars per token, CJK heavier, 0 for empty', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd')).toBe(1);
    expect(estimateTokens('abcde')).toBe(2);
    expect(estimateTokens('x'.repeat(400))).toBe(100);
    expect(estimateTokens('你好世界')).toBe(3);
  });

  it('estimateInputTokens counts system, messages, images, tool results and tool schemas', () => {
    const req = AnthropicMessagesRequest.parse({
      model: 'm',
      max_tokens: 1,
      system: 'x'.repeat(40), // 10
      messages: [
        { role: 'user', content: 'y'.repeat(80) }, // 3 + 20
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't', name: 'abcd', input: { k: 'v' } }], // 3 + 1 + 3 ('{"k":"v"}' = 9 chars)
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't', content: 'z'.repeat(8) }, // 2 + 1
            { type: 'image', source: { type: 'url', url: 'https://x' } }, // 1600
          ],
        }, // + 3
      ],
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
    });
    const toolJson = JSON.stringify({ name: 'f', input_schema: { type: 'object' } });
    expect(estimateInputTokens(req)).toBe(10 + 23 + 7 + 3 + 3 + IMAGE_TOKENS + Math.ceil(toolJson.length / 4));
  });

  it('never returns 0', () => {
    expect(estimateInputTokens({ messages: [] })).toBe(1);
  });
});
