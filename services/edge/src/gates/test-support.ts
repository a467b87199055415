import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import type { EdgePresence, Face, GateState } from '@gatehouse/contracts';
import { createLogger, keyDigest, type GateRecord, type GateStore, type Watch } from '@gatehouse/common';
import { LiveGates } from './live-gates.ts';

/**
 * For fast face tests (`app.inject()`): LiveGates in a chosen state without NATS. The gates follow an
 * in-memory store through their real code path (first read, then the watch), so `unknown` is what a
 * missing or unusable record really gives, and `set` is a live flip as `scripts/gate` makes one.
 */
export type GateSetting = 'open' | 'unknown' | { keys: string[]; readOnlyKeys?: string[] };

export interface TestGates {
  gates: LiveGates;
  /** Flip one face and return once this instance applied it (re-judging in-flight requests included). */
  set(face: Face, setting: GateSetting): Promise<void>;
  stop(): Promise<void>;
}

function stateOf(setting: GateSetting): GateState | null {
  const at = new Date().toISOString();
  if (setting === 'unknown') return null;
  if (setting === 'open') return { v: 1, state: 'open', changedAt: at, changedBy: 'test' };
  return {
    v: 1,
    state: 'enforced',
    keyDigests: setting.keys.map(keyDigest),
    ...(setting.readOnlyKeys ? { readOnlyKeyDigests: setting.readOnlyKeys.map(keyDigest) } : {}),
    changedAt: at,
    changedBy: 'test',
  };
}

/** The gate records the store holds, and a watch that delivers each later write. */
class MemoryGateStore implements Pick<GateStore, 'get' | 'watch' | 'putPresence' | 'deletePresence'> {
  private readonly records = new Map<Face, GateRecord>();
  private revision = 0;
  private waiting: ((r: IteratorResult<GateRecord>) => void) | undefined;
  private readonly queued: GateRecord[] = [];
  private stopped = false;

  /** `watched: false` for the records present before the gates start following (no later replay). */
  write(face: Face, setting: GateSetting, watched = true): void {
    const state = stateOf(setting);
    const rec: GateRecord = { face, revision: ++this.revision, state, ...(state ? {} : { error: 'no usable gate record (test)' }) };
    this.records.set(face, rec);
    if (!watched) return;
    if (this.waiting) {
      this.waiting({ value: rec, done: false });
      this.waiting = undefined;
    } else this.queued.push(rec);
  }

  async get(face: Face): Promise<GateRecord | null> {
    return this.records.get(face) ?? null;
  }

  async watch(): Promise<Watch<GateRecord>> {
    return {
      stop: () => {
        this.stopped = true;
        this.waiting?.({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => ({
        next: () => {
          const rec = this.queued.shift();
          if (rec) return Promise.resolve({ value: rec, done: false });
          if (this.stopped) return Promise.resolve({ value: undefined, done: true });
          return new Promise<IteratorResult<GateRecord>>((resolve) => (this.waiting = resolve));
        },
      }),
    };
  }

  async putPresence(_p: EdgePresence): Promise<number> {
    return this.revision;
  }

  async deletePresence(): Promise<void> {}
}

export async function testGates(settings: Partial<Record<Face, GateSetting>>): Promise<TestGates> {
  const faces = Object.keys(settings) as Face[];
  const store = new MemoryGateStore();
  for (const face of faces) store.write(face, settings[face]!, false);
  const gates = new LiveGates(faces, createLogger('edge-test', 'silent'));
  await gates.follow(store as unknown as GateStore);
  return {
    gates,
    set: (face, setting) =>
      new Promise<void>((resolve) => {
        let done = false;
        gates.onChange((f) => {
          if (f !== face || done) return;
          done = true;
          resolve();
        });
        store.write(face, setting);
      }),
    stop: () => gates.stop(),
  };
}

export interface RawRequest {
  method?: string;
  /** Sent exactly as written: inject() would resolve `..` and `.` before the face sees them. */
  path: string;
  headers?: Record<string, string>;
  /** JSON (sent with `content-type: application/json`), or a string sent as is. */
  body?: unknown;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface FaceUnderTest extends TestGates {
  app: FastifyInstance;
  /** One request over a socket, for path tricks; `app.inject()` for the rest. */
  send(r: RawRequest): Promise<RawResponse>;
}

/** A face built on test gates (starting as `initial`) and listening on a free loopback port. */
export async function startFace(face: Face, initial: GateSetting, build: (gates: LiveGates) => Promise<FastifyInstance>): Promise<FaceUnderTest> {
  const t = await testGates({ [face]: initial });
  const app = await build(t.gates);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const send = (r: RawRequest) =>
    new Promise<RawResponse>((resolve, reject) => {
      const payload = r.body === undefined ? undefined : typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
      const headers = { ...(payload !== undefined ? { 'content-type': 'application/json' } : {}), ...r.headers };
      const req = request({ host: '127.0.0.1', port, path: r.path, method: r.method ?? (payload === undefined ? 'GET' : 'POST'), headers }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject).end(payload);
    });
  return {
    ...t,
    app,
    send,
    stop: async () => {
      await app.close();
      await t.stop();
    },
  };
}

/** The server options of a face under test: nothing logged. */
export const quietServer = { log: createLogger('face-test', 'silent'), logRequests: false };

/** `startFace` for a whole test file: started before its tests, stopped after them. Call the getter inside tests. */
export function faceForTests(face: Face, initial: GateSetting, build: (gates: LiveGates) => Promise<FastifyInstance>): () => FaceUnderTest {
  let started: FaceUnderTest | undefined;
  beforeAll(async () => {
    started = await startFace(face, initial, build);
  });
  afterAll(() => started?.stop());
  return () => started!;
}
