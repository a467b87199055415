import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { Bus, Logger, SightingRecorder } from '@gatehouse/common';
import type { EdgeEnv } from '../config.ts';
import type { LiveGates } from '../gates/live-gates.ts';
import type { StreamSlots } from '../kit/index.ts';
import { buildSpeechFace } from './speech/speech-face.ts';
import { buildLlmFace } from './llm/llm-face.ts';
import { buildVectorFace } from './vector/vector-face.ts';
import { VectorGrpcServer } from './vector/grpc/vector-grpc.ts';
import type { RequestStats } from './vector/request-stats.ts';
import { buildChatFace } from './chat/chat-face.ts';
import { SessionStore } from './chat/session-store.ts';

export type FaceName = EdgeEnv['EDGE_FACES'][number];

/** What the composition root (main.ts) hands every face. */
export interface EdgeContext {
  env: EdgeEnv;
  log: Logger;
  /** What every face's server shares (the kit's buildFace). */
  server: { log: Logger; logRequests: boolean; trustProxy: EdgeEnv['EDGE_TRUST_PROXY'] };
  gates: LiveGates;
  bus: () => Bus | undefined;
  redis: Redis;
  /** Concurrent generations per caller, counted across edges (kit/stream-limits.ts). */
  slots(face: 'speech' | 'llm' | 'chat', limit: number): StreamSlots;
  /** Request statistics of the vector face's two ports, for its `/telemetry` and `/metrics`. */
  vectorStats: RequestStats;
  vectorSightings?: SightingRecorder;
  /** The chat session secret, loaded (or generated) when the chat face is served. */
  sessionSecret(): string;
}

/** A listener besides the face's HTTP port (the vector face's gRPC), closed with the edge. */
export interface ExtraListener {
  close(): Promise<void>;
}

export interface FaceEntry {
  port(env: EdgeEnv): number;
  build(ctx: EdgeContext): Promise<FastifyInstance>;
  /** Started once the HTTP port listens. */
  alsoListen?(ctx: EdgeContext): Promise<ExtraListener>;
}

/** The faces an edge can serve (EDGE_FACES picks among them), each with its port and options. */
export const FACES: Record<FaceName, FaceEntry> = {
  speech: {
    port: (env) => env.SPEECH_PORT,
    build: (c) =>
      buildSpeechFace(c.server, {
        gates: c.gates,
        bus: c.bus,
        streamIdleMs: c.env.SPEECH_STREAM_IDLE_MS,
        streamSlots: c.slots('speech', c.env.SPEECH_MAX_STREAMS_PER_CLIENT),
        streamMaxMs: c.env.SPEECH_STREAM_MAX_DURATION_MS,
      }),
  },
  llm: {
    port: (env) => env.PROXY_PORT,
    build: (c) =>
      buildLlmFace(c.server, {
        gates: c.gates,
        bus: c.bus,
        streamIdleMs: c.env.LLM_STREAM_IDLE_MS,
        streamSlots: c.slots('llm', c.env.LLM_MAX_STREAMS_PER_CLIENT),
        streamMaxMs: c.env.LLM_STREAM_MAX_DURATION_MS,
      }),
  },
  vector: {
    port: (env) => env.VECTOR_PORT,
    build: (c) =>
      buildVectorFace(c.server, { gates: c.gates, bus: c.bus, sightings: c.vectorSightings, requestStats: c.vectorStats, requestTimeoutMs: c.env.VECTOR_REQUEST_TIMEOUT_MS }),
    // Qdrant's gRPC port: the same operations, gate and sightings as REST, over HTTP/2.
    alsoListen: async (c) => {
      const grpc = new VectorGrpcServer({ gates: c.gates, bus: c.bus, sightings: c.vectorSightings, log: c.log, requestStats: c.vectorStats });
      const port = await grpc.listen(c.env.EDGE_HOST, c.env.VECTOR_GRPC_PORT);
      c.log.info({ face: 'vector', address: `${c.env.EDGE_HOST}:${port}`, protocol: 'grpc' }, 'vector face gRPC listening');
      return grpc;
    },
  },
  chat: {
    port: (env) => env.CHAT_PORT,
    build: (c) => {
      const env = c.env;
      return buildChatFace(c.server, {
        bus: c.bus,
        sessions: new SessionStore(c.redis, env.GATEHOUSE_NS, {
          perAccount: env.SIGNIN_RATE_LIMIT_PER_ACCOUNT,
          perAddress: env.SIGNIN_RATE_LIMIT_PER_ADDRESS,
          windowMs: env.SIGNIN_RATE_LIMIT_WINDOW_SECONDS * 1000,
        }),
        redisReady: () => c.redis.status === 'ready',
        secret: c.sessionSecret(),
        cookie: { sameSite: env.WEBUI_AUTH_COOKIE_SAME_SITE, secure: env.WEBUI_AUTH_COOKIE_SECURE },
        allowedOrigins: env.CORS_ALLOW_ORIGIN.split(';').map((o) => o.trim()),
        streamIdleMs: env.CHAT_STREAM_IDLE_MS,
        streamSlots: c.slots('chat', env.CHAT_MAX_STREAMS_PER_USER),
        streamMaxMs: env.CHAT_STREAM_MAX_DURATION_MS,
        requestTimeoutMs: env.CHAT_REQUEST_TIMEOUT_MS,
        uploadTimeoutMs: env.CHAT_UPLOAD_TIMEOUT_MS,
        fileMaxSizeMb: env.RAG_FILE_MAX_SIZE,
        webUi: { dir: env.WEB_UI_DIR },
        oauth: { redis: c.redis, ns: env.GATEHOUSE_NS, ...(env.WEBUI_AUTH_SIGNOUT_REDIRECT_URL ? { signoutRedirectUrl: env.WEBUI_AUTH_SIGNOUT_REDIRECT_URL } : {}) },
        trustedHeader: { email: env.WEBUI_AUTH_TRUSTED_EMAIL_HEADER, name: env.WEBUI_AUTH_TRUSTED_NAME_HEADER, groups: env.WEBUI_AUTH_TRUSTED_GROUPS_HEADER },
        apiDocs: env.ENV === 'dev',
      });
    },
  },
};
