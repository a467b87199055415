import { z } from 'zod';
import { DEFAULT_NATS_URL } from '@gatehouse/common';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** The edge's environment. Keys are read here once; only their digests go further. */
export const EdgeEnv = z.object({
  /** NATS server (JetStream on): the bus to the workers and the gate store. */
  NATS_URL: z.string().default(DEFAULT_NATS_URL),
  /** Address every face listens on; 0.0.0.0 inside a container, loopback on a bare host. */
  EDGE_HOST: z.string().default('127.0.0.1'),
  /** Speech face port. Bare host: TTS_GATEWAY_PORT (default 8196); container: 8000, published as 8196. */
  SPEECH_PORT: port(8196),
  /** Seed 000: non-empty enforces the speech gate on start-up when it changed (docs/gates.md). */
  API_KEY: z.string().optional(),
  /** Longest silence between two frames of a synthesis stream before the edge gives up. */
  SPEECH_STREAM_IDLE_MS: z.coerce.number().int().positive().default(15_000),
});
export type EdgeEnv = z.infer<typeof EdgeEnv>;
