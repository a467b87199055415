import type { FastifyReply } from 'fastify';
import type { Face } from '@gatehouse/contracts';
import type { LiveGates } from './live-gates.ts';

/**
 * A face's health: 200 only when the bus is connected and every gate this edge serves is
 * applied; otherwise 503 "degraded" with the reasons (a fail-closed gate shows up here).
 */
export function sendHealth(reply: FastifyReply, face: Face, gates: LiveGates, busConnected: boolean): FastifyReply {
  const gate = gates.get(face);
  const degraded = gates.degraded();
  const ok = degraded.length === 0 && busConnected;
  return reply.code(ok ? 200 : 503).send({
    status: ok ? 'ok' : 'degraded',
    gate: { state: gate.status === 'ready' ? gate.state.state : 'unknown', revision: gate.revision },
    bus: busConnected ? 'connected' : 'disconnected',
    ...(ok ? {} : { degraded: busConnected ? degraded : [...degraded, 'bus: not connected'] }),
  });
}
