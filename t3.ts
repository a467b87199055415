import * as grpc from '@grpc/grpc-js';
import { Agent, request } from 'node:http';
import { Stack } from './scripts/src/local-stack.ts';
import { qdrantService } from './services/edge/src/faces/vector/grpc/qdrant-proto.ts';
const stack = new Stack();
try {
  await stack.startVectorWorker();
  const edge = await stack.startEdge({ EDGE_FACES: 'vector', LOG_LEVEL: 'warn' });
  const P = grpc.makeGenericClientConstructor(qdrantService('qdrant.Points'), 'P');
  const p: any = new P(`127.0.0.1:${edge.vectorGrpcPort}`, grpc.credentials.createInsecure());
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const http = (method: string, path: string, body?: string) => new Promise<void>((res, rej) => { const r = request({ host: '127.0.0.1', port: edge.vectorPort, method, path, agent, headers: body ? { 'content-type': 'application/json' } : {} }, (x) => { x.resume(); x.on('end', () => res()); }); r.on('error', rej); r.end(body); });
  await http('PUT', '/collections/t', JSON.stringify({ vectors: { size: 384, distance: 'Cosine' } }));
  const vec = Array.from({ length: 384 }, (_, i) => Math.round(Math.sin(i) * 1e6) / 1e6);
  const pts = Array.from({ length: 200 }, (_, k) => ({ id: k, vector: vec.map((x, i) => x + ((i * k) % 7) / 100), payload: { k } }));
  await http('PUT', '/collections/t/points?wait=true', JSON.stringify({ points: pts }));
  const g = (c: any, m: string, req: any) => new Promise<void>((res, rej) => c[m](req, (e: any) => e ? rej(e) : res()));
  const T = async (name: string, f: () => Promise<void>, n = 500) => { for (let i = 0; i < 50; i++) await f(); const xs: number[] = []; for (let i = 0; i < n; i++) { const t0 = performance.now(); await f(); xs.push(performance.now() - t0); } xs.sort((a, b) => a - b); console.log(name, 'p50', xs[n >> 1]!.toFixed(3), 'p99', xs[Math.floor(n * 0.99)]!.toFixed(3)); };
  const body = JSON.stringify({ query: vec, limit: 10 });
  for (let round = 0; round < 2; round++) {
    await T('grpc query', () => g(p, 'Query', { collection_name: 't', query: { nearest: { dense: { data: vec } } }, limit: 10 }));
    await T('rest query', () => http('POST', '/collections/t/points/query', body));
  }
} finally { await stack.close(); }
