import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { startFakeOpenAI, type FakeUpstream } from '../../scripts/src/fake-upstreams/openai.ts';
import { startFakeAnthropic } from '../../scripts/src/fake-upstreams/anthropic.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { CLAUDE_BUILDS, describeRun, mcpServerConfig, modelSlots, runClaude, startRecorder, type ClaudeBuild, type Recorder, type Sent } from '../support/claude-code.ts';

/**
 * The real Claude Code CLI (`claude -p`, both the native 2.1.197 build and the pure-JavaScript 2.1.112) against
 * the LLM proxy face, every model slot set to a `provider/model` id of the fake OpenAI upstream. A recorder in
 * front of the proxy keeps every request the CLI sent and the proxy's status, so the tests assert on the
 * conversation as Claude Code had it, and the fake upstream on what reached the provider.
 */
const stack = new Stack();
let edge: Edge;
let openai: FakeUpstream;
let anthropic: FakeUpstream;
let recorder: Recorder;
const upstreamKey = newKey();
const proxyKey = newKey();
/** The CLI is killed after this; a hang fails with what it sent so far. */
const RUN_MS = 60_000;
const TEST_MS = RUN_MS + 15_000;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: upstreamKey });
  anthropic = await startFakeAnthropic();
  const dir = mkdtempSync(join(tmpdir(), 'claude-code-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      providers: {
        fake: { type: 'openai', baseUrl: openai.url, apiKeyEnv: 'FAKE_OPENAI_KEY', models: ['echo', 'call', 'reasoning'] },
        // The same upstream, configured as one that cannot take system messages mid-conversation.
        nosys: { type: 'openai', baseUrl: openai.url, apiKeyEnv: 'FAKE_OPENAI_KEY', models: ['echo'], midConversationSystem: false },
      },
      native: { baseUrl: anthropic.url },
      // Claude Code's own model names, routed as claude-code-router users set them up: the main model by
      // name, the small/fast one as background work (to a model the test can tell apart).
      // claude-opus-… goes to a provider that is down (503), with the echo as its fallback.
      routing: {
        models: { 'claude-sonnet-*': 'fake/echo', 'claude-opus-*': { to: 'fake/error-503', fallbacks: ['fake/echo'] } },
        background: 'fake/reasoning',
      },
      timeoutMs: 20_000,
      retries: { max: 1, baseDelayMs: 50, maxDelayMs: 200 },
    }),
  );
  await stack.startProxyWorker({ LLMPROXY_CONFIG: config, FAKE_OPENAI_KEY: upstreamKey });
  edge = await stack.startEdge({ LLMPROXY_CONFIG: config });
  recorder = await startRecorder(edge.proxyUrl);
});
afterAll(async () => {
  await recorder?.close();
  await stack.close();
  await openai?.close();
  await anthropic?.close();
});

/** A project folder for the CLI to work in. */
const project = () => mkdtempSync(join(tmpdir(), 'claude-project-'));
const word = () => randomBytes(6).toString('hex');

/**
 * Runs the CLI through the recorder with every model slot on `fake/<model>` (or the model variables in
 * `slots`); returns the run, what it sent, and what reached the fake OpenAI upstream.
 */
async function turn(
  build: ClaudeBuild,
  opts: { prompt: string; model?: string; slots?: Record<string, string>; auth?: Record<string, string>; args?: string[]; cwd?: string; env?: Record<string, string> },
) {
  recorder.clear();
  const upstreamFrom = openai.requests.length;
  const run = await runClaude(build, {
    prompt: opts.prompt,
    cwd: opts.cwd ?? project(),
    args: opts.args,
    timeoutMs: RUN_MS,
    env: {
      ANTHROPIC_BASE_URL: recorder.url,
      ...(opts.auth ?? { ANTHROPIC_API_KEY: 'unused-while-the-gate-is-open' }),
      ...(opts.slots ?? modelSlots(`fake/${opts.model ?? 'echo'}`)),
      ...opts.env,
    },
  });
  const sent = [...recorder.sent];
  const posts = sent.filter((s) => s.method === 'POST' && s.path.split('?')[0] === '/v1/messages');
  return { run, sent, posts, upstream: openai.requests.slice(upstreamFrom), why: describeRun(run, recorder) };
}

interface AnthropicBody {
  model?: string;
  stream?: boolean;
  metadata?: { user_id?: string };
  output_config?: { effort?: string };
  tools?: { name: string }[];
  messages?: { role: string; content: unknown }[];
}
const bodyOf = (s: Sent | undefined) => (s?.json ?? {}) as AnthropicBody;
interface ChatBody {
  model?: string;
  stream?: boolean;
  user?: unknown;
  reasoning_effort?: unknown;
  tools?: { function?: { name?: string } }[];
  messages?: { role: string; content: unknown; tool_call_id?: string }[];
}
const chatOf = (r: { json: unknown } | undefined) => (r?.json ?? {}) as ChatBody;
const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));

describe.each(CLAUDE_BUILDS)('Claude Code $name, gate open', (build) => {
  it(
    'a plain turn: HEAD / probe, one streamed POST /v1/messages?beta=true, the upstream text as the result',
    async () => {
      const prompt = `say hello ${word()}`;
      const { run, sent, posts, upstream, why } = await turn(build, { prompt, model: 'echo' });
      expect(run.timedOut, why).toBe(false);
      expect(run.json?.is_error, why).toBe(false);
      expect(run.code, why).toBe(0);
      // The fake echoes the last user message: Claude Code's context reminder, then the prompt.
      expect(run.json?.result, why).toMatch(/^echo: /);
      expect(run.json?.result?.endsWith(prompt), why).toBe(true);

      // What Claude Code sent: a reachability probe, then the turn (no count_tokens in -p mode).
      expect(sent[0], why).toMatchObject({ method: 'HEAD', path: '/' });
      expect(sent[0]?.status, why).toBeLessThan(400);
      expect(posts.length, why).toBe(1);
      const post = posts[0]!;
      expect(post.path).toBe('/v1/messages?beta=true');
      expect(post.status, why).toBe(200);
      expect(post.headers['anthropic-version']).toBe('2023-06-01');
      expect(post.headers['anthropic-beta']).toContain('claude-code-20250219');
      expect(post.headers['user-agent']).toBe(`claude-cli/${build.version} (external, sdk-cli)`);
      expect(post.answerHeaders?.['request-id'], why).toBeTruthy();
      const body = bodyOf(post);
      expect(body).toMatchObject({ model: 'fake/echo', stream: true, thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
      expect(body.tools?.length).toBeGreaterThan(20);
      expect(body.metadata?.user_id).toMatch(/device_id/);

      // What reached the provider: the model without its provider prefix, the effort asked for, and not
      // Claude Code's device and session ids.
      expect(upstream.length, why).toBe(1);
      const chat = chatOf(upstream[0]);
      expect(chat.model).toBe('echo');
      expect(chat.stream).toBe(true);
      expect(chat.reasoning_effort, 'output_config.effort high').toBe('high');
      const ids = JSON.parse(body.metadata?.user_id ?? '{}') as { device_id?: string; session_id?: string };
      expect(JSON.stringify(chat)).not.toContain(ids.device_id);
      expect(JSON.stringify(chat)).not.toContain(ids.session_id);
    },
    TEST_MS,
  );

  it(
    'a tool loop: the upstream calls Read, Claude Code reads the file and sends the tool_result, the upstream answers from it',
    async () => {
      const cwd = project();
      const secret = `note-${word()}`;
      const file = join(cwd, 'note.txt');
      writeFileSync(file, `${secret}\n`);
      const prompt = `Read the note.\nCALL Read ${JSON.stringify({ file_path: file })}`;
      const { run, posts, upstream, why } = await turn(build, { prompt, model: 'call', cwd, args: ['--allowedTools', 'Read'] });
      expect(run.timedOut, why).toBe(false);
      expect(run.json?.is_error, why).toBe(false);
      expect(run.json?.result, why).toMatch(/^tool said: /);
      expect(run.json?.result, why).toContain(secret);

      // Claude Code's side: two POSTs, the second carrying the tool_use and its tool_result.
      expect(posts.length, why).toBe(2);
      const second = bodyOf(posts[1]).messages ?? [];
      const use = second.flatMap((m) => (m.role === 'assistant' && Array.isArray(m.content) ? m.content : [])).find((b: { type?: string }) => b.type === 'tool_use') as
        | { id: string; name: string; input: unknown }
        | undefined;
      expect(use, why).toMatchObject({ name: 'Read', input: { file_path: file } });
      const result = second.flatMap((m) => (m.role === 'user' && Array.isArray(m.content) ? m.content : [])).find((b: { type?: string }) => b.type === 'tool_result') as
        | { tool_use_id: string; content: unknown }
        | undefined;
      expect(result?.tool_use_id).toBe(use?.id);
      expect(text(result?.content)).toContain(secret);

      // The provider's side: the Read tool offered, then the result as an OpenAI tool message.
      expect(upstream.length, why).toBe(2);
      expect(chatOf(upstream[0]).tools?.map((t) => t.function?.name)).toContain('Read');
      const toolMessage = chatOf(upstream[1]).messages?.find((m) => m.role === 'tool');
      expect(text(toolMessage?.content)).toContain(secret);
      const callId = (chatOf(upstream[1]).messages?.find((m) => m.role === 'assistant') as { tool_calls?: { id: string }[] } | undefined)?.tool_calls?.[0]?.id;
      expect(toolMessage?.tool_call_id).toBe(callId);
    },
    TEST_MS,
  );

  it(
    'an MCP tool: a stdio server from --mcp-config is offered to the upstream, called, and its answer comes back',
    async () => {
      const stamp = word();
      const prompt = `Stamp it.\nCALL mcp__probe__stamp ${JSON.stringify({ word: 'gatehouse' })}`;
      const { run, posts, upstream, why } = await turn(build, {
        prompt,
        model: 'call',
        args: ['--mcp-config', mcpServerConfig('probe', { MCP_STAMP: stamp }), '--strict-mcp-config', '--allowedTools', 'mcp__probe__stamp'],
        // 2.1.197 sends the first request before MCP servers are up and offers a WaitForMcpServers tool
        // instead; a non-Claude model does not know to call it. 0 makes -p wait for the servers. The
        // waits are longer than the defaults (5 s to connect) because a loaded machine starts Node slowly.
        env: { MCP_CONNECTION_NONBLOCKING: '0', MCP_CONNECT_TIMEOUT_MS: '30000', MCP_TIMEOUT: '30000' },
      });
      expect(run.timedOut, why).toBe(false);
      expect(run.json?.is_error, why).toBe(false);
      expect(run.json?.result, why).toBe(`tool said: stamped gatehouse with ${stamp}`);
      expect(posts.length, why).toBe(2);
      expect(bodyOf(posts[0]).tools?.map((t) => t.name)).toContain('mcp__probe__stamp');
      expect(chatOf(upstream[0]).tools?.map((t) => t.function?.name)).toContain('mcp__probe__stamp');
      expect(text(chatOf(upstream[1]).messages?.find((m) => m.role === 'tool')?.content)).toContain(stamp);
    },
    TEST_MS,
  );
});

describe('Claude Code 2.1.197 and a provider without mid-conversation system messages', () => {
  it(
    'the proxy refuses in Anthropic\'s wording, Claude Code retries once without them, and the turn completes',
    async () => {
      const prompt = `no system ${word()}`;
      const { run, posts, upstream, why } = await turn(CLAUDE_BUILDS[0]!, { prompt, slots: modelSlots('nosys/echo') });
      expect(run.json?.is_error, why).toBe(false);
      expect(run.json?.result?.endsWith(prompt), why).toBe(true);
      expect(posts.map((p) => p.status), why).toEqual([400, 200]);
      expect(bodyOf(posts[0]).messages?.map((m) => m.role)).toContain('system');
      expect(posts[0]?.headers['anthropic-beta']).toContain('mid-conversation-system-2026-04-07');
      expect(bodyOf(posts[1]).messages?.map((m) => m.role)).not.toContain('system');
      expect(posts[1]?.headers['anthropic-beta']).not.toContain('mid-conversation-system-2026-04-07');
      expect(upstream.length, why).toBe(1);
    },
    TEST_MS,
  );
});

describe('Claude Code with the gate enforced', () => {
  beforeAll(async () => {
    const r = await flipGate(await stack.store(), 'llm', enforcedState([proxyKey], 'test'));
    expect(r.lagging).toEqual([]);
  });
  afterAll(async () => {
    await flipGate(await stack.store(), 'llm', openState('test'));
  });

  const native = CLAUDE_BUILDS[0]!;

  it(
    'the proxy key as ANTHROPIC_API_KEY goes out as x-api-key and the turn completes',
    async () => {
      const prompt = `gated ${word()}`;
      const { run, posts, why } = await turn(native, { prompt, model: 'echo', auth: { ANTHROPIC_API_KEY: proxyKey } });
      expect(run.json?.is_error, why).toBe(false);
      expect(run.json?.result?.endsWith(prompt), why).toBe(true);
      expect(posts.length, why).toBe(1);
      expect(posts[0]?.headers['x-api-key']).toBe('<set>');
      expect(posts[0]?.headers.authorization).toBeUndefined();
    },
    TEST_MS,
  );

  it(
    'the proxy key as ANTHROPIC_AUTH_TOKEN goes out as a Bearer token and the turn completes',
    async () => {
      const prompt = `bearer ${word()}`;
      const { run, posts, why } = await turn(native, { prompt, model: 'echo', auth: { ANTHROPIC_AUTH_TOKEN: proxyKey } });
      expect(run.json?.is_error, why).toBe(false);
      expect(run.json?.result?.endsWith(prompt), why).toBe(true);
      expect(posts.length, why).toBe(1);
      expect(posts[0]?.headers.authorization).toBe('Bearer <set>');
      expect(posts[0]?.headers['x-api-key']).toBeUndefined();
    },
    TEST_MS,
  );

  it.each(CLAUDE_BUILDS)(
    'a wrong key fails after exactly one request ($name): the 401 says a retry cannot fix it',
    async (build) => {
      const upstreamBefore = openai.requests.length;
      const { run, posts, why } = await turn(build, { prompt: 'hello', model: 'echo', auth: { ANTHROPIC_API_KEY: newKey() } });
      expect(run.timedOut, why).toBe(false);
      expect(run.code, why).not.toBe(0);
      expect(posts.length, why).toBe(1);
      expect(posts[0]?.status).toBe(401);
      expect(posts[0]?.answerHeaders?.['x-should-retry']).toBe('false');
      expect(posts[0]?.answerHeaders?.['request-id']).toBeTruthy();
      expect(openai.requests.length).toBe(upstreamBefore);
    },
    TEST_MS,
  );

  it.each(CLAUDE_BUILDS)(
    'routing ($name): Claude Code names claude-sonnet-… and claude-haiku-…, the routing table sends them to the provider',
    async (build) => {
      const auth = { ANTHROPIC_AUTH_TOKEN: proxyKey };
      const prompt = `routed ${word()}`;
      const nativeBefore = anthropic.requests.length;
      const sonnet = await turn(build, { prompt, auth, slots: { ANTHROPIC_MODEL: 'claude-sonnet-4-5', ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5' } });
      expect(sonnet.run.json?.is_error, sonnet.why).toBe(false);
      expect(sonnet.run.json?.result?.endsWith(prompt), sonnet.why).toBe(true);
      expect(sonnet.posts.map((p) => bodyOf(p).model)).toEqual(['claude-sonnet-4-5']);
      expect(sonnet.upstream.map((r) => chatOf(r).model)).toEqual(['echo']);

      // The small/fast model as the main one: every turn is "background" work then.
      const haiku = await turn(build, { prompt, auth, slots: { ANTHROPIC_MODEL: 'claude-haiku-4-5', ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5' } });
      expect(haiku.run.json?.is_error, haiku.why).toBe(false);
      expect(haiku.run.json?.result?.endsWith(prompt), haiku.why).toBe(true);
      expect(haiku.upstream.map((r) => chatOf(r).model)).toEqual(['reasoning']);
      expect(anthropic.requests.length, 'nothing passed through to Anthropic').toBe(nativeBefore);
    },
    2 * TEST_MS,
  );

  it(
    'a route whose provider answers 503 falls back before Claude Code sees anything: one request, the answer of the fallback',
    async () => {
      const prompt = `fallback ${word()}`;
      const { run, posts, upstream, why } = await turn(CLAUDE_BUILDS[0]!, {
        prompt,
        auth: { ANTHROPIC_AUTH_TOKEN: proxyKey },
        slots: { ANTHROPIC_MODEL: 'claude-opus-4-1', ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5' },
      });
      expect(run.json?.is_error, why).toBe(false);
      expect(run.json?.result?.endsWith(prompt), why).toBe(true);
      expect(posts.length, why).toBe(1);
      expect(posts[0]?.status).toBe(200);
      const models = upstream.map((r) => chatOf(r).model);
      expect(models[0], models.join(',')).toBe('error-503');
      expect(models.at(-1), models.join(',')).toBe('echo');
      expect(models.filter((m) => m === 'echo').length).toBe(1);
    },
    TEST_MS,
  );

  it(
    'a routed claude-… model is gated like any provider model: a wrong key stops at one 401, nothing reaches a provider',
    async () => {
      const upstreamBefore = openai.requests.length;
      const nativeBefore = anthropic.requests.length;
      const { run, posts, why } = await turn(CLAUDE_BUILDS[0]!, {
        prompt: 'hello',
        auth: { ANTHROPIC_API_KEY: newKey() },
        slots: { ANTHROPIC_MODEL: 'claude-sonnet-4-5', ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5' },
      });
      expect(run.timedOut, why).toBe(false);
      expect(run.code, why).not.toBe(0);
      expect(posts.length, why).toBe(1);
      expect(posts[0]?.status).toBe(401);
      expect(openai.requests.length).toBe(upstreamBefore);
      expect(anthropic.requests.length).toBe(nativeBefore);
    },
    TEST_MS,
  );
});
