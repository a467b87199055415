import { LLM_CATALOG } from '@gatehouse/contracts';
import type { ApiDocsOptions, RouteDocs } from '../../kit/index.ts';

/** The LLM face's OpenAPI document (kit/api-docs.ts), generated from LLM_CATALOG's routes. */
export const LLM_DOCS: ApiDocsOptions = {
  title: 'Gatehouse LLM proxy (Anthropic Messages)',
  description:
    'Anthropic Messages routed to any OpenAI-compatible or Anthropic provider. When the gate is enforced every non-GET path under /v1 needs the proxy key (`x-proxy-key`, `x-api-key` or `Authorization: Bearer`), except a native `claude-…` model passed through.',
  errorEnvelope: {
    type: 'object',
    properties: { type: { const: 'error' }, error: { type: 'object', properties: { type: { type: 'string' }, message: { type: 'string' } } }, request_id: { type: 'string' } },
  },
  errors: { 400: 'Invalid request', 401: 'Missing or wrong proxy key (gate enforced)', 503: 'Worker down or gate state unavailable (fail closed)' },
  securitySchemes: { proxyKey: { type: 'apiKey', in: 'header', name: 'x-proxy-key' }, apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' }, bearer: { type: 'http', scheme: 'bearer' } },
  security: [{ proxyKey: [] }, { apiKey: [] }, { bearer: [] }],
};

/** What each operation answers, for the document. */
export function llmRouteDocs(op: keyof typeof LLM_CATALOG): RouteDocs {
  if (op === 'messages') {
    return {
      reply: { description: 'The message (JSON), or its events (`text/event-stream`) with stream=true', content: { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } } },
      status: { 429: 'Too many replies in progress for this client' },
    };
  }
  return { reply: LLM_CATALOG[op].reply };
}
