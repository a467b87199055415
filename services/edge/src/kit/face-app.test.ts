import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { buildFace } from './face-app.ts';

/** A face whose one route answers the client address Fastify derived under `trustProxy`. */
async function face(trustProxy: boolean | number | string[]) {
  return buildFace(
    { face: 'chat', log: pino({ level: 'silent' }), logRequests: false, bodyLimit: 1024, trustProxy },
    async (f) => {
      f.get('/ip', async (req) => ({ ip: req.ip }));
    },
    {},
  );
}

const ipOf = async (app: Awaited<ReturnType<typeof face>>, xff?: string) =>
  (await app.inject({ method: 'GET', url: '/ip', remoteAddress: '127.0.0.1', headers: xff ? { 'x-forwarded-for': xff } : {} })).json().ip;

describe('EDGE_TRUST_PROXY as Fastify reads it (kit/face-app.ts)', () => {
  it('a hop count trusts that many nearest hops, as proxy-addr counts them', async () => {
    const one = await face(1);
    expect(await ipOf(one)).toBe('127.0.0.1');
    expect(await ipOf(one, '203.0.113.7')).toBe('203.0.113.7'); // the peer is the one trusted hop
    expect(await ipOf(one, '198.51.100.1, 203.0.113.7')).toBe('203.0.113.7'); // what the client wrote before it is not believed
    const two = await face(2);
    expect(await ipOf(two, '198.51.100.1, 203.0.113.7')).toBe('198.51.100.1');
    await Promise.all([one.close(), two.close()]);
  });

  it('false ignores X-Forwarded-For; addresses trust only the proxies named', async () => {
    const none = await face(false);
    expect(await ipOf(none, '203.0.113.7')).toBe('127.0.0.1');
    const named = await face(['10.0.0.1']);
    expect(await ipOf(named, '203.0.113.7')).toBe('127.0.0.1'); // the peer is not the named proxy
    await Promise.all([none.close(), named.close()]);
  });
});
