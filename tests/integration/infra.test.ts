import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { parse } from 'yaml';

/** What the bring-up promises: Postgres with a working pgvector, Redis, and the compose file's contract. */
const sql = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => undefined });
const redis = new Redis(process.env.REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 });
afterAll(async () => {
  await sql.end({ timeout: 5 });
  redis.disconnect();
});

describe('infrastructure brought up by scripts/test', () => {
  it('Postgres has pgvector 0.8 and it computes distances', async () => {
    await sql`create extension if not exists vector`;
    const [ext] = await sql`select extversion from pg_extension where extname = 'vector'`;
    expect(ext?.extversion).toMatch(/^0\.8\./);
    const [row] = await sql`select ('[1,0,0]'::vector <=> '[0,1,0]'::vector) as cos, ('[3,4]'::vector <-> '[0,0]'::vector) as l2`;
    expect(Number(row?.cos)).toBeCloseTo(1, 6);
    expect(Number(row?.l2)).toBeCloseTo(5, 6);
  });

  it('Redis answers', async () => {
    await redis.connect();
    const key = `infra-test:${process.pid}`;
    await redis.set(key, 'ok', 'EX', 10);
    expect(await redis.get(key)).toBe('ok');
  });
});

describe('docker-compose.yml', () => {
  const compose = parse(readFileSync(join(import.meta.dirname, '..', '..', 'docker-compose.yml'), 'utf8'));
  const raw = readFileSync(join(import.meta.dirname, '..', '..', 'docker-compose.yml'), 'utf8');

  it('runs the infrastructure, the edge and the speech worker', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['chat-worker', 'edge', 'nats', 'postgres', 'proxy-worker', 'redis', 'speech-worker', 'vector-worker']);
    expect(compose.services.nats.command).toContain('-js');
    expect(compose.services.postgres.image).toMatch(/pgvector/);
  });

  it('publishes the speech face exactly as seed 000 says, on loopback only', () => {
    expect(compose.services.edge.ports).toContain('127.0.0.1:${TTS_GATEWAY_PORT:-8196}:8000');
    for (const [name, svc] of Object.entries<{ ports?: string[] }>(compose.services)) {
      for (const p of svc.ports ?? []) expect(p, `${name} publishes ${p}`).toMatch(/^127\.0\.0\.1:/);
    }
    expect(compose.services.edge.environment.SPEECH_PORT).toBe('8000');
    expect(compose.services.edge.environment.EDGE_HOST).toBe('0.0.0.0');
  });

  it('publishes the LLM proxy on 3000 with its key from LLMPROXY_PROXY_KEY', () => {
    expect(compose.services.edge.ports).toContain('127.0.0.1:${LLMPROXY_PORT:-3000}:3000');
    expect(compose.services.edge.environment.LLMPROXY_PROXY_KEY).toBe('${LLMPROXY_PROXY_KEY:-}');
    expect(compose.services['proxy-worker'].environment.LLMPROXY_CONFIG).toBe(compose.services.edge.environment.LLMPROXY_CONFIG);
  });

  it('publishes the vector store on 6333 with its keys', () => {
    expect(compose.services.edge.ports).toContain('127.0.0.1:${VECTORDB_PORT:-6333}:6333');
    expect(compose.services.edge.environment.VECTORDB__SERVICE__API_KEY).toBe('${VECTORDB__SERVICE__API_KEY:-}');
  });

  it('publishes the chat platform on 8080 with a persisted session secret', () => {
    expect(compose.services.edge.ports).toContain('127.0.0.1:${OPEN_WEBUI_PORT:-8080}:8080');
    expect(compose.services.edge.environment.CHAT_PORT).toBe('8080');
    expect(compose.services.edge.environment.WEBUI_SECRET_KEY_FILE).toMatch(/^\/data\//);
    expect(compose.services.edge.volumes).toContain('edge-data:/data');
    expect(compose.services['chat-worker'].environment.DATABASE_URL).toBe(compose.services.edge.environment.DATABASE_URL);
  });

  it('renders the speech key from TTS_GATEWAY_API_KEY into API_KEY, default empty', () => {
    expect(raw).toContain('API_KEY: ${TTS_GATEWAY_API_KEY:-}');
    expect(compose.services.edge.environment.API_KEY).toBe('${TTS_GATEWAY_API_KEY:-}');
  });
});
