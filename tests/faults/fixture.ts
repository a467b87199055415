import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sql } from 'postgres';
import { EVENTS_STREAM } from '@gatehouse/contracts';
import { startFakeOpenAI, type FakeUpstream } from '../../scripts/src/fake-upstreams/openai.ts';
import { newKey, waitFor, type Stack } from '../support/local-stack.ts';
import { openChatDb } from '../../services/chat-worker/src/db.ts';
import type { Limits, Tally } from './load.ts';

/**
 * What the fault scenarios share: short limits for the edge (so a killed worker's request ends
 * in seconds, not in the production default's minutes), the client-side limit above each (past
 * it a request counts as hung), an LLM provider on the fake OpenAI upstream, and the counting of
 * acknowledged writes afterwards.
 */
export const EDGE_LIMITS = {
  LLM_STREAM_IDLE_MS: '8000',
  SPEECH_STREAM_IDLE_MS: '8000',
  CHAT_STREAM_IDLE_MS: '6000',
  CHAT_REQUEST_TIMEOUT_MS: '6000',
  VECTOR_REQUEST_TIMEOUT_MS: '6000',
  CHAT_UPLOAD_TIMEOUT_MS: '6000',
  // The steady load comes from one client (160 LLM streams at once, over the default 128 per
  // client): the generation limits are tests/integration/resource-limits.test.ts's subject, not this suite's.
  LLM_MAX_STREAMS_PER_CLIENT: '0',
  SPEECH_MAX_STREAMS_PER_CLIENT: '0',
  CHAT_MAX_STREAMS_PER_USER: '0',
};
/** The client waits the face's limit plus this margin (a busy 2-core machine) before calling a request hung. */
const MARGIN_MS = 20_000;
export const CLIENT_LIMITS: Limits = {
  speech: Number(EDGE_LIMITS.SPEECH_STREAM_IDLE_MS) + MARGIN_MS,
  llm: Number(EDGE_LIMITS.LLM_STREAM_IDLE_MS) + MARGIN_MS,
  vector: Number(EDGE_LIMITS.VECTOR_REQUEST_TIMEOUT_MS) + MARGIN_MS,
  chat: Number(EDGE_LIMITS.CHAT_REQUEST_TIMEOUT_MS) + MARGIN_MS,
};

export const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback) || fallback;

export interface LlmSetup {
  upstream: FakeUpstream;
  /** Environment for the edge and proxy workers. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function fakeLlm(): Promise<LlmSetup> {
  const key = newKey();
  const upstream = await startFakeOpenAI({ apiKey: key });
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-faults-llm-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ providers: { fake: { type: 'openai', baseUrl: upstream.url, apiKeyEnv: 'FAKE_OPENAI_KEY', models: ['slow', 'echo', 'paced'] } }, timeoutMs: 10_000, retries: { max: 1, baseDelayMs: 50, maxDelayMs: 200 } }),
  );
  return { upstream, env: { LLMPROXY_CONFIG: config, FAKE_OPENAI_KEY: key, ENABLE_OLLAMA_API: 'false' }, close: async () => {
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    } };
}

export const chatSql = (stack: Stack): Sql => openChatDb(stack.databaseUrl, `chat_${stack.ns}`, 2);

/** How many of the acknowledged ids are in `table`. */
async function present(sql: Sql, table: string, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const [r] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)} where id in ${sql(ids)}`;
  return r!.n;
}

/**
 * Count the acknowledged chat writes in Postgres (memories, chats and their message rows, files),
 * then wait for the outbox to drain and compare it with the events stream on JetStream: every
 * event written is published, once.
 */
export async function countChatWrites(stack: Stack, t: Tally): Promise<{ found: Record<string, { acked: number; found: number }>; lines: string[] }> {
  const sql = chatSql(stack);
  try {
    const found: Record<string, { acked: number; found: number }> = {};
    for (const [what, table] of [
      ['memories', 'memory'],
      ['chats', 'chat'],
      ['files', 'file'],
    ] as const) {
      const ids = (t.acked[what] ?? []).map(String);
      found[what] = { acked: ids.length, found: await present(sql, table, ids) };
    }
    const chats = (t.acked.chats ?? []).map(String);
    const [m] = chats.length ? await sql<{ n: number }[]>`select count(distinct chat_id)::int as n from chat_message where chat_id in ${sql(chats)}` : [{ n: 0 }];
    found['chat messages'] = { acked: chats.length, found: m!.n };
    // Every acknowledged write has its event in the outbox, written in the same transaction.
    const named = async (event: string, ids: string[]) => {
      if (!ids.length) return 0;
      const [r] = await sql<{ n: number }[]>`select count(distinct event -> 'subject' ->> 'id')::int as n from outbox where event ->> 'event' = ${event} and event -> 'subject' ->> 'id' in ${sql(ids)}`;
      return r!.n;
    };
    const events = (t.acked.memories ?? []).length + chats.length + (t.acked.files ?? []).length;
    const eventsFound = (await named('memory.created', (t.acked.memories ?? []).map(String))) + (await named('chat.created', chats)) + (await named('file.uploaded', (t.acked.files ?? []).map(String)));
    found['outbox events'] = { acked: events, found: eventsFound };
    // The relay publishes them all, each once (Nats-Msg-Id deduplication across a crash).
    let pending = -1;
    await waitFor(
      async () => {
        pending = (await sql<{ n: number }[]>`select count(*)::int as n from outbox where published_at is null`)[0]!.n;
        return pending === 0;
      },
      30_000,
      () => `${pending} outbox events were never published`,
    );
    const bySubject = await sql<{ subject: string; n: number }[]>`select subject, count(*)::int as n from outbox group by subject`;
    const rows = bySubject.reduce((a, r) => a + r.n, 0);
    const bus = await stack.busHandle();
    const jsm = await bus.nc.jetstreamManager();
    // Per subject: the stream also carries platform events that never pass the outbox (collection.created).
    const subjects = (await jsm.streams.info(bus.bucket(EVENTS_STREAM), { subjects_filter: '>' })).state.subjects ?? {};
    const inStream = bySubject.reduce((a, r) => a + (subjects[r.subject] ?? subjects[bus.subject(r.subject)] ?? 0), 0);
    found['outbox on JetStream'] = { acked: rows, found: inStream };
    return { found, lines: [`outbox: ${rows} events, 0 pending; on the events stream under their subjects: ${inStream}`] };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** How many of the acknowledged point ids the collection holds (read through the face). */
export async function countPoints(vectorUrl: string, collection: string, ids: number[], headers: Record<string, string> = {}): Promise<number> {
  let found = 0;
  for (let i = 0; i < ids.length; i += 500) {
    const r = await fetch(`${vectorUrl}/collections/${collection}/points`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ ids: ids.slice(i, i + 500), with_payload: false, with_vector: false }),
    });
    if (r.status !== 200) throw new Error(`retrieve: ${r.status} ${await r.text()}`);
    found += ((await r.json()) as { result: unknown[] }).result.length;
  }
  return found;
}
