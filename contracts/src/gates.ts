import { z } from 'zod';

/**
 * The network faces, each behind a gate (the chat face has its own accounts). `keyEnv` is the documented variable whose value (when
 * non-empty) enforces the gate at start-up; see docs/gates.md for the restart rules.
 */
export const FACES = {
  speech: { port: 8196, keyEnv: 'API_KEY', title: 'speech gateway' },
  llm: { port: 3000, keyEnv: 'LLMPROXY_PROXY_KEY', title: 'LLM proxy' },
  vector: { port: 6333, keyEnv: 'VECTORDB__SERVICE__API_KEY', title: 'vector store' },
} as const;
export type Face = keyof typeof FACES;
export const FaceName = z.enum(Object.keys(FACES) as [Face, ...Face[]]);

/** JetStream KV buckets holding gate state. */
export const GATE_BUCKET = 'gatehouse_gates';
/** Live edge instances and what they applied; entries expire when an instance stops heartbeating. */
export const EDGE_PRESENCE_BUCKET = 'gatehouse_edges';

export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256 digest');

/**
 * Desired gate state of one face (KV key `gate.<face>`). Holds the SHA-256 digest of the key,
 * never the key itself.
 */
export const GateState = z.discriminatedUnion('state', [
  z.object({
    v: z.literal(1),
    state: z.literal('open'),
    changedAt: z.string(),
    changedBy: z.string(),
  }),
  z
    .object({
      v: z.literal(1),
      state: z.literal('enforced'),
      /** Digests of the keys with full access. */
      keyDigests: z.array(Sha256Hex),
      /** Digests of read-only keys (vector store: may read, 403 on writes). */
      readOnlyKeyDigests: z.array(Sha256Hex).optional(),
      /** Rotation: the previous keys, still accepted until `graceUntil`, then not. */
      graceKeyDigests: z.array(Sha256Hex).optional(),
      graceUntil: z.string().optional(),
      changedAt: z.string(),
      changedBy: z.string(),
    })
    .refine((s) => s.keyDigests.length + (s.readOnlyKeyDigests?.length ?? 0) > 0, 'an enforced gate needs at least one key'),
]);
export type GateState = z.infer<typeof GateState>;
export type EnforcedGate = Extract<GateState, { state: 'enforced' }>;

/** The digests an enforced gate accepts at `now`: full access (incl. rotation grace) and read-only. */
export function acceptedDigests(s: EnforcedGate, now = Date.now()): { full: string[]; readOnly: string[] } {
  const grace = s.graceUntil && Date.parse(s.graceUntil) > now ? (s.graceKeyDigests ?? []) : [];
  return { full: [...s.keyDigests, ...grace], readOnly: s.readOnlyKeyDigests ?? [] };
}

/**
 * Last value of the face's key variable the edges started with (KV key `env.<face>`): SHA-256 of
 * the value, or "" when it was empty. Lets a restart tell "variable changed" from "plain restart".
 */
export const EnvObservation = z.object({ v: z.literal(1), digest: z.union([Sha256Hex, z.literal('')]), at: z.string() });
export type EnvObservation = z.infer<typeof EnvObservation>;

export const AppliedGate = z.object({
  revision: z.number().int().nonnegative(),
  state: z.enum(['open', 'enforced', 'unknown']),
  at: z.string(),
});

/** What an edge instance reports about itself (KV key = instance id). */
export const EdgePresence = z.object({
  v: z.literal(1),
  instance: z.string(),
  host: z.string(),
  pid: z.number().int(),
  startedAt: z.string(),
  heartbeatAt: z.string(),
  /** Faces this instance serves and the gate revision it applied for each. */
  applied: z.record(z.string(), AppliedGate),
  degraded: z.array(z.string()),
});
export type EdgePresence = z.infer<typeof EdgePresence>;
