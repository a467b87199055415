import { flipGate, enforcedState } from '../src/gate-ops.ts';
import { newKey } from '../../tests/support/local-stack.ts';
import { type HttpTarget, setupCall as call } from './load.ts';
import { DIM, EXPECTED, type Face, FOLDERS, POINTS, PROMPT, UPSERT_IDS, USERS } from './soak-settings.ts';
import type { Topology } from './topology.ts';

// The soak's set-up on a started stack and its requests: gates enforced, a collection, chat users
// with folders, then one target per face (its request mix and the check of every answer). Apart
// from soak.ts because it is what the soak sends, not how long or how fast.

/** Seeded random unit vectors (mulberry32 + Box-Muller), rounded as a client sends them. */
function vectors(n: number, seed: number): number[][] {
  let a = seed;
  const r = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: n }, () => {
    const v = Array.from({ length: DIM }, () => Math.sqrt(-2 * Math.log(r() || 1e-12)) * Math.cos(2 * Math.PI * r()));
    const norm = Math.hypot(...v);
    return v.map((x) => Number((x / norm).toFixed(6)));
  });
}

/** Gates, data, users; one target per face, each a mix of its requests. */
export async function prepare(t: Topology, { proxyKey, vectorKey }: { proxyKey: string; vectorKey: string }): Promise<Record<Face, HttpTarget>> {
  const store = await t.stack.store();
  for (const [face, key] of [['llm', proxyKey], ['vector', vectorKey]] as const) {
    const flip = await flipGate(store, face, enforcedState([key], 'bench-soak'));
    if (flip.lagging.length || flip.applied.length !== 1) throw new Error(`${face} gate flip applied on ${flip.applied.length} edges`);
  }
  const l = t.listeners[0]!;
  const vh = { 'api-key': vectorKey };
  const points = vectors(POINTS, 20261127);
  const queryBodies = points.map((v) => JSON.stringify({ query: v, limit: 10 }));
  const upserts = vectors(UPSERT_IDS, 7);
  await call(l.vectorPort, 'PUT', '/collections/soak', vh, { vectors: { size: DIM, distance: 'Cosine' } });
  for (let b = 0; b < points.length; b += 250) {
    await call(l.vectorPort, 'PUT', '/collections/soak/points?wait=true', vh, { points: points.slice(b, b + 250).map((vector, k) => ({ id: b + k, vector, payload: { n: b + k } })) });
  }
  const admin = (await call(l.chatPort, 'POST', '/api/v1/auths/signup', {}, { name: 'Soak Admin', email: `admin-${t.stack.ns}@bench.test`, password: newKey() })) as { token: string };
  const users: string[] = [];
  for (let u = 0; u < USERS; u++) {
    const r = (await call(l.chatPort, 'POST', '/api/v1/auths/add', { authorization: `Bearer ${admin.token}` }, { name: `User ${u}`, email: `u${u}-${t.stack.ns}@bench.test`, password: newKey(), role: 'user' })) as { token: string };
    users.push(r.token);
    for (let f = 0; f < FOLDERS; f++) await call(l.chatPort, 'POST', '/api/v1/folders/', { authorization: `Bearer ${r.token}` }, { name: `u${u} folder ${f}` });
  }
  const json = { 'content-type': 'application/json' };
  const speechBody = JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'The soak goes on.', response_format: 'mp3' });
  const llmBody = (stream: boolean) => JSON.stringify({ model: 'fake/echo', max_tokens: 64, stream, messages: [{ role: 'user', content: PROMPT }] });
  const llmBodies = [llmBody(false), llmBody(true)];
  return {
    speech: {
      host: '127.0.0.1',
      port: l.speechPort,
      method: 'POST',
      request: () => ({ path: '/v1/audio/speech', headers: json, body: speechBody }),
      check: (b) => {
        if (b.length < 100) throw new Error(`${b.length} bytes of audio`);
      },
    },
    llm: {
      host: '127.0.0.1',
      port: l.proxyPort,
      method: 'POST',
      request: (i) => ({ path: '/v1/messages', headers: { ...json, 'anthropic-version': '2023-06-01', 'x-proxy-key': proxyKey }, body: llmBodies[i % 2] }),
      check: (b, i) => {
        if (i % 2 === 0) {
          const m = JSON.parse(b) as { type?: string; content?: { text?: string }[] };
          if (m.type !== 'message' || m.content?.[0]?.text !== EXPECTED) throw new Error('unexpected message');
          return;
        }
        if (!b.includes('event: message_stop')) throw new Error('stream without message_stop');
        let text = '';
        for (const line of b.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const e = JSON.parse(line.slice(6)) as { type?: string; delta?: { type?: string; text?: string } };
          if (e.type === 'content_block_delta' && e.delta?.type === 'text_delta') text += e.delta.text;
        }
        if (text !== EXPECTED) throw new Error(`streamed text ${JSON.stringify(text.slice(0, 80))}`);
      },
    },
    vector: {
      host: '127.0.0.1',
      port: l.vectorPort,
      method: 'POST',
      request: (i) =>
        i % 4 === 3
          ? { method: 'PUT', path: '/collections/soak/points?wait=true', headers: { ...json, ...vh }, body: JSON.stringify({ points: [{ id: 100_000 + (i % UPSERT_IDS), vector: upserts[i % UPSERT_IDS], payload: { i } }] }) }
          : { path: '/collections/soak/points/query', headers: { ...json, ...vh }, body: queryBodies[i % queryBodies.length] },
      check: (b, i) => {
        const r = JSON.parse(b) as { status?: string; result?: { status?: string; points?: { id: unknown; score: number }[] } };
        if (r.status !== 'ok') throw new Error('status not ok');
        if (i % 4 === 3) {
          if (r.result?.status !== 'completed') throw new Error('upsert not completed');
          return;
        }
        const p = r.result?.points;
        if (!p || p.length !== 10) throw new Error('not 10 points');
        if (p[0]!.id !== i % queryBodies.length || p[0]!.score < 0.999) throw new Error(`the query's own point ${i % queryBodies.length} is not first`);
      },
    },
    chat: {
      host: '127.0.0.1',
      port: l.chatPort,
      method: 'GET',
      request: (i) =>
        i % 4 === 3
          ? { method: 'POST', path: '/api/v1/memories/add', headers: { ...json, authorization: `Bearer ${users[i % users.length]!}` }, body: JSON.stringify({ content: `soak memory ${i}` }) }
          : { path: '/api/v1/folders/', headers: { authorization: `Bearer ${users[i % users.length]!}` } },
      check: (b, i) => {
        if (i % 4 === 3) {
          const m = JSON.parse(b) as { id?: unknown; content?: string };
          if (typeof m.id !== 'string' || m.content !== `soak memory ${i}`) throw new Error('not the memory sent');
          return;
        }
        const fs = JSON.parse(b) as { name?: string }[];
        const u = i % users.length;
        if (!Array.isArray(fs) || fs.length !== FOLDERS || !fs.every((f) => f.name?.startsWith(`u${u} folder `))) throw new Error(`not the ${FOLDERS} folders of user ${u}`);
      },
    },
  };
}
