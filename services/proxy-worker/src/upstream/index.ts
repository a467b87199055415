export * from './anthropic-client.ts';
export * from './config.ts';
export * from './errors.ts';
export { backoffMs, parseRetryAfter, type RequestOptions, type RetryInfo } from './http.ts';
export * from './openai-client.ts';
export * from './sse.ts';
