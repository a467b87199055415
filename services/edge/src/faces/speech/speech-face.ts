import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { installGateGuard } from '../../gates/gate-guard.ts';
import { sendHealth } from '../../gates/health.ts';
import { exemptMatcher } from '../../gates/normalise-path.ts';
import type { LiveGates } from '../../gates/live-gates.ts';
import { bearerToken, buildFace, type FaceServerOptions } from '../../kit/index.ts';
import { OPENAI_ERROR_ENVELOPE, openaiError, speechRefusal, toOpenAIError } from './openai-errors.ts';
import { registerApiDocs } from '../../kit/api-docs.ts';
import { speechRoutes, type SpeechRouteDeps } from './speech-routes.ts';

/** Public paths of the speech gateway. `/docs/*` and `/redoc/*` are their own assets. */
export const SPEECH_EXEMPT = ['/health', '/docs', '/docs/*', '/openapi.json', '/redoc', '/redoc/*', '/admin/*'] as const;

const require = createRequire(import.meta.url);

export interface SpeechFaceOptions extends SpeechRouteDeps {
  gates: LiveGates;
}

/** The speech face (OpenAI text-to-speech) as a plugin: gate, OpenAI envelope, docs, catalog routes. */
export const speechFace: FastifyPluginAsync<SpeechFaceOptions> = async (app, opts) => {
  const exempt = exemptMatcher(SPEECH_EXEMPT);
  installGateGuard(app, {
    face: 'speech',
    gates: opts.gates,
    // Every path but the public ones, whatever the method.
    gated: (_req, path, tricky) => tricky || !exempt(path),
    credential: (req) => bearerToken(req.headers.authorization),
    refusal: speechRefusal,
  });

  app.setErrorHandler((err, req, reply) => {
    const e = toOpenAIError(err);
    if (e.status >= 500) req.log.error({ err }, 'speech request failed');
    return reply.code(e.status).headers(e.headers ?? {}).send(e.body);
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send(openaiError(404, `Invalid URL (${req.method} ${req.url})`).body));

  await registerApiDocs(app, {
    title: 'Gatehouse speech gateway',
    description: 'OpenAI-compatible text-to-speech. When the gate is enforced every path except /health, /docs, /openapi.json, /redoc and /admin/* needs `Authorization: Bearer <key>`.',
    errorEnvelope: OPENAI_ERROR_ENVELOPE,
    errors: { 401: 'Missing or wrong bearer key (gate enforced)', 503: 'Worker down or gate state unavailable (fail closed)' },
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    security: [{ bearer: [] }],
    skip: ['/redoc', '/redoc/redoc.standalone.js'],
  });
  app.get('/health', { config: { docs: { public: true, status: { 503: 'Degraded: the bus is away or the gate state unknown' } } } }, async (_req, reply) => sendHealth(reply, 'speech', opts.gates, opts.bus() !== undefined));

  // Public (health probes carry no key), so read-only and secret-free: state and revision, never a fingerprint.
  app.get('/admin/status', { config: { docs: { public: true } } }, async () => {
    const gate = opts.gates.get('speech');
    return {
      face: 'speech',
      instance: opts.gates.instance,
      gate: { state: gate.status === 'ready' ? gate.state.state : 'unknown', revision: gate.revision, applied_at: gate.at },
    };
  });

  const redocJs = readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'));
  app.get('/redoc', async (_req, reply) =>
    reply
      .type('text/html')
      .send(
        '<!doctype html><html><head><meta charset="utf-8"><title>Gatehouse speech gateway</title></head>' +
          '<body><redoc spec-url="/openapi.json"></redoc><script src="/redoc/redoc.standalone.js"></script></body></html>',
      ),
  );
  app.get('/redoc/redoc.standalone.js', async (_req, reply) => reply.type('application/javascript').send(redocJs));

  speechRoutes(app, opts);
};

export function buildSpeechFace(server: Pick<FaceServerOptions, 'log' | 'logRequests' | 'trustProxy'>, opts: SpeechFaceOptions): Promise<FastifyInstance> {
  return buildFace({ ...server, face: 'speech', bodyLimit: 1024 * 1024 }, speechFace, opts);
}
