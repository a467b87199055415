import { z } from 'zod';
import { SpeechModel, SpeechModelList, SpeechRequest, SpeechVoiceList } from '@gatehouse/contracts';

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });

const ErrorEnvelope = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        message: { type: 'string' },
        type: { type: 'string' },
        param: { type: ['string', 'null'] },
        code: { type: ['string', 'null'] },
      },
    },
  },
};

const errors = {
  '400': { description: 'Invalid request (names the field in `param`)', content: { 'application/json': { schema: ErrorEnvelope } } },
  '401': { description: 'Missing or wrong bearer key (gate enforced)', content: { 'application/json': { schema: ErrorEnvelope } } },
  '503': { description: 'Worker down or gate state unavailable (fail closed)', content: { 'application/json': { schema: ErrorEnvelope } } },
};

/** The speech face's OpenAPI document, generated from the same zod schemas the edge validates with. */
export function speechOpenApi(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse speech gateway',
      version: '1.0.0',
      description: 'OpenAI-compatible text-to-speech. When the gate is enforced every path except /health, /docs, /openapi.json, /redoc and /admin/* needs `Authorization: Bearer <key>`.',
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths: {
      '/v1/audio/speech': {
        post: {
          summary: 'Synthesize speech',
          requestBody: { required: true, content: { 'application/json': { schema: json(SpeechRequest) } } },
          responses: {
            '200': {
              description: 'Audio, streamed as it is produced (wav is sent whole so its header sizes are right); `text/event-stream` with stream_format=sse',
              content: {
                'audio/mpeg': { schema: { type: 'string', format: 'binary' } },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            ...errors,
          },
        },
      },
      '/v1/models': { get: { summary: 'List models', responses: { '200': { description: 'Models', content: { 'application/json': { schema: json(SpeechModelList) } } }, ...errors } } },
      '/v1/models/{id}': {
        get: {
          summary: 'Get a model',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': { description: 'Model', content: { 'application/json': { schema: json(SpeechModel) } } }, ...errors },
        },
      },
      '/v1/audio/voices': { get: { summary: 'List voices ({id, name})', responses: { '200': { description: 'Voices', content: { 'application/json': { schema: json(SpeechVoiceList) } } }, ...errors } } },
      '/health': { get: { summary: 'Health (public)', security: [], responses: { '200': { description: 'Up and gate applied' }, '503': { description: 'Degraded' } } } },
      '/admin/status': { get: { summary: 'Public, read-only gate status (no secrets)', security: [], responses: { '200': { description: 'Status' } } } },
    },
  };
}
