import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { rememberSecret, scanLog, secretsOfEnv } from '../../scripts/src/log-scan.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { chatClient, pw } from './chat-fixture.ts';

/**
 * Keys, passwords and tokens never reach a log, even at the loudest logging (LOG_LEVEL=debug,
 * LOG_REQUESTS=true): every way a client sends one — right and wrong gate keys in each header a
 * face reads, session tokens as Bearer and cookie, an API key, passwords in failed and successful
 * sign-ins, a key inside a malformed body — then every process's output is scanned
 * (scripts/src/log-scan.ts; the whole run's logs are scanned again by tests/security/log-audit.test.ts).
 */
const stack = new Stack();
const loud = { LOG_LEVEL: 'debug', LOG_REQUESTS: 'true' };
const proxyKey = newKey();
const upstreamKey = newKey();
let edge: Edge;
let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
const chat = chatClient(() => edge.chatUrl);

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: upstreamKey });
  await stack.startProxyWorker({ ...loud, OPENAI_API_BASE_URLS: openai.url, OPENAI_API_KEYS: upstreamKey });
  await stack.startChatWorker(loud);
  edge = await stack.startEdge({ ...loud, EDGE_FACES: 'llm,chat', LLMPROXY_PROXY_KEY: proxyKey }, true);
});
afterAll(async () => {
  await stack.close();
  await openai?.close();
});

describe('secrets stay out of the logs', () => {
  it('survive every way a client sends them, at debug level with request logging', async () => {
    const wrong = newKey();
    const message = JSON.stringify({ model: 'echo', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const llm = (headers: Record<string, string>, body = message) =>
      fetch(`${edge.proxyUrl}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect((await llm({ 'x-proxy-key': proxyKey })).status).not.toBe(401);
    expect((await llm({ 'x-api-key': proxyKey })).status).not.toBe(401);
    expect((await llm({ authorization: `Bearer ${proxyKey}` })).status).not.toBe(401);
    expect((await llm({ 'x-proxy-key': wrong })).status).toBe(401);
    // Refused either way (the body may be read before the key is checked); what matters is the log.
    expect([400, 401]).toContain((await llm({ authorization: `Bearer ${wrong}` }, `{"api_key":"${wrong}",`)).status);
    expect((await llm({ 'x-proxy-key': proxyKey }, `{"api_key":"${wrong}", "password": "${wrong}"`)).status).toBe(400);

    const admin = await chat.signup('Admin');
    const badPassword = pw();
    expect((await chat.call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: badPassword })).status).toBe(400);
    expect((await chat.call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password })).status).toBe(200);
    expect((await chat.call('/api/v1/auths/', admin)).status).toBe(200);
    const cookie = await fetch(`${edge.chatUrl}/api/v1/auths/`, { headers: { cookie: `token=${admin.token}` } });
    expect(cookie.status).toBe(200);
    expect((await chat.call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_API_KEYS: true, ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: false })).status).toBe(200);
    const apiKey = rememberSecret((await chat.call('/api/v1/auths/api_key', admin, 'POST')).body.api_key as string);
    expect(apiKey).toMatch(/^sk-/);
    // The setting reaches the edge through the config bucket's watch: a bounded wait.
    await expect.poll(async () => (await chat.call('/api/models', apiKey)).status, { timeout: 5000, interval: 50 }).toBe(200);
    expect((await fetch(`${edge.chatUrl}/api/models`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);
    expect((await chat.call('/api/v1/auths/', `${admin.token}x`)).status).toBe(401);
    expect([400, 422]).toContain((await chat.call('/api/v1/memories/add', admin, 'POST', `{"content": "${apiKey}"`)).status);
    expect((await chat.call('/api/v1/auths/update/password', admin, 'POST', { password: badPassword, new_password: pw() })).status).toBe(400);
    rememberSecret(admin.token);
  });

  it('no process logged one (and request logging was on)', async () => {
    const procs = [...stack.workers, ...stack.edges.map((e) => e.proc)];
    for (const p of procs) await p.stop();
    const lines = procs.reduce((n, p) => n + p.log().split('\n').length, 0);
    const requestLines = stack.edges[0]!.proc.log().split('\n').filter((l) => l.includes('"req":')).length;
    expect(requestLines, 'the edge logged its requests').toBeGreaterThan(15);
    const findings = procs.flatMap((p) =>
      scanLog(p.log(), secretsOfEnv({ LLMPROXY_PROXY_KEY: proxyKey, OPENAI_API_KEYS: upstreamKey })).findings.map((f) => `${p.name} line ${f.line} [${f.kind}]: ${f.excerpt}`),
    );
    console.log(`[log-redaction] ${procs.length} processes, ${lines} lines (${requestLines} request lines), ${findings.length} findings`);
    expect(findings).toEqual([]);
  });
});
