import { createHash, timingSafeEqual } from 'node:crypto';
import { allText, contentText, type Exchange, type FakeOptions, type FakeUpstream, lastUserText, pieces, randomId, sendJson, sendJsonCut, startFake, tokenCount, write } from './common.ts';

export type { FakeUpstream, Recorded } from './common.ts';

/**
 * A fake OpenAI-compatible server (`/v1/chat/completions`, `/v1/models`) on 127.0.0.1, speaking the real wire
 * format. The request's `model` picks the behaviour:
 * - `echo` (and any unknown model): `echo: <last user text>`, usage included (stream: with
 *   `stream_options.include_usage`, in a trailing `choices: []` chunk);
 * - `tools`: calls the request's first tool (or `get_weather`) with `{"city":"Paris"}`, streamed as OpenAI does
 *   (id/name first, arguments in 3 fragments), plus a second call when 2+ tools were offered;
 * - `call`: a tool loop driven by the prompt, for agents that run tools themselves (Claude Code): when a user
 *   message has a line `CALL <tool> <json arguments>` it calls that tool (streamed as `tools` does; a text
 *   saying so when no such tool was offered); once `tool` results follow that message, it answers
 *   `tool said: <result texts>`; without a CALL line, the echo;
 * - `reasoning`: `reasoning_content` deltas, then the echo;
 * - `python`: a short answer with a fenced Python block (`print(sum(range(10)) * 7)`), for a UI's Run button;
 * - `ollama-reasoning`: Ollama style: `reasoning` deltas, tool calls whole in one chunk when tools were offered;
 * - `think-tags`: `<think>pondering</think>The answer.` with the tags split across chunks;
 * - `error-<status>` (400, 401, 429 with retry-after 1 or the request's `x-fake-retry-after`, 500, 503, …):
 *   the OpenAI error envelope with that status;
 * - `flaky-500`: 500 on the first attempt of each request (keyed by `x-test-id`, else the last user text), then echo;
 * - `slow`: 200 ms before the answer / between stream chunks;
 * - `paced`: the echo with 5 ms between stream chunks (one chunk per word: a fixed-rate stream, ~200 chunks/s);
 * - `slow-reasoning`: the `reasoning` script (several `reasoning_content` deltas, then the echo) with
 *   300 ms between stream chunks, so a browser shows the thinking phase before the answer; `drop`: two chunks (non-stream: half the JSON),
 *   then the socket is destroyed;
 * - `hang`: never answers (close() still ends it).
 */
export function startFakeOpenAI(opts: FakeOptions = {}): Promise<FakeUpstream> {
  const seenFlaky = new Set<string>();
  const expected = opts.apiKey === undefined ? undefined : digest(`Bearer ${opts.apiKey}`);
  return startFake({ ...opts, urlSuffix: '/v1' }, async (ex) => {
    const { req, res, rec } = ex;
    if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
      return sendJson(res, 401, envelope('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'));
    }
    const path = rec.path.split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      const created = 1_700_000_000;
      return sendJson(res, 200, { object: 'list', data: MODELS.map((id) => ({ id, object: 'model', created, owned_by: 'fake-upstream' })) });
    }
    if (path !== '/v1/chat/completions') {
      return sendJson(res, 404, envelope(`Unknown request URL: ${req.method} ${path}.`, 'invalid_request_error', 'unknown_url'));
    }
    if (req.method !== 'POST') return sendJson(res, 405, envelope(`Method ${req.method} not allowed.`, 'invalid_request_error', null));
    const body = rec.json as ChatBody | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      rec.body = rec.raw.toString('utf8');
      return sendJson(res, 400, envelope('We could not parse the JSON body of your request.', 'invalid_request_error', null));
    }
    const model = typeof body.model === 'string' ? body.model : 'echo';

    const err = /^error-(\d{3})$/.exec(model);
    if (err) return sendError(ex, Number(err[1]));
    if (model === 'hang') return; // never answers
    if (model === 'flaky-500') {
      const key = headerOne(req.headers['x-test-id']) ?? lastUserText(body.messages);
      if (!seenFlaky.has(key)) {
        seenFlaky.add(key);
        return sendError(ex, 500);
      }
    }
    await answer(ex, model, body);
  });
}

export const MODELS = ['echo', 'tools', 'call', 'reasoning', 'slow-reasoning', 'python', 'ollama-reasoning', 'think-tags', 'flaky-500', 'slow', 'paced', 'drop', 'hang'];

interface ChatBody {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
  tools?: unknown;
}

/** One streamed delta, and how it shows in the non-stream message. */
interface Script {
  deltas: Record<string, unknown>[];
  message: Record<string, unknown>;
  finish: 'stop' | 'tool_calls';
  completionText: string;
  reasoningTokens: number;
  ollama: boolean;
}

const ARGUMENTS = '{"city":"Paris"}';
export const PYTHON_ANSWER = 'Run this:\n\n```python\nprint(sum(range(10)) * 7)\n```\n';
const ARGUMENT_FRAGMENTS = ['{"ci', 'ty":"Pa', 'ris"}'];

function toolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .map((t: unknown) => (t as { function?: { name?: unknown }; name?: unknown } | undefined)?.function?.name ?? (t as { name?: unknown } | undefined)?.name)
    .filter((n): n is string => typeof n === 'string');
}

const CALL_LINE = /^CALL (\S+) (\{.*\})\s*$/m;

/** What the `call` model does next: answer the tool results that followed the CALL line, call the tool it names, or neither. */
function callStep(body: ChatBody): { result: string } | { name: string; args: string } | { missing: string } | undefined {
  const messages = Array.isArray(body.messages) ? (body.messages as ({ role?: unknown; content?: unknown } | undefined)[]) : [];
  let at = messages.length - 1;
  while (at >= 0 && !(messages[at]?.role === 'user' && CALL_LINE.test(contentText(messages[at]?.content)))) at--;
  if (at < 0) return undefined;
  // Agents put reminders (user or system text) next to the result, so the result need not be the last message.
  const results = messages.slice(at + 1).filter((m) => m?.role === 'tool');
  if (results.length > 0) return { result: results.map((m) => contentText(m?.content)).join('\n') };
  const [, name = '', args = '{}'] = CALL_LINE.exec(contentText(messages[at]?.content)) ?? [];
  return toolNames(body.tools).includes(name) ? { name, args } : { missing: name };
}

function script(model: string, body: ChatBody): Script {
  const echo = `echo: ${lastUserText(body.messages)}`;
  const textScript = (text: string, reasoning?: { field: 'reasoning_content' | 'reasoning'; text: string }): Script => {
    const deltas: Record<string, unknown>[] = [{ role: 'assistant', content: '', refusal: null }];
    const message: Record<string, unknown> = { role: 'assistant', content: text, refusal: null, annotations: [] };
    if (reasoning) {
      for (const piece of pieces(reasoning.text)) deltas.push({ [reasoning.field]: piece });
      message[reasoning.field] = reasoning.text;
    }
    const split = model === 'think-tags' ? ['<thi', 'nk>ponder', 'ing</th', 'ink>The ', 'answer.'] : pieces(text);
    for (const piece of split) deltas.push({ content: piece });
    return { deltas, message, finish: 'stop', completionText: text + (reasoning?.text ?? ''), reasoningTokens: reasoning ? tokenCount(reasoning.text) : 0, ollama: false };
  };

  switch (model) {
    case 'call': {
      const step = callStep(body);
      if (!step) return textScript(echo);
      if ('result' in step) return textScript(`tool said: ${step.result}`);
      if ('missing' in step) return textScript(`no tool named ${step.missing} was offered`);
      const id = randomId('call_');
      const third = Math.ceil(step.args.length / 3);
      const fragments = [step.args.slice(0, third), step.args.slice(third, 2 * third), step.args.slice(2 * third)];
      const deltas: Record<string, unknown>[] = [
        { role: 'assistant', content: null, tool_calls: [{ index: 0, id, type: 'function', function: { name: step.name, arguments: '' } }], refusal: null },
        ...fragments.map((fragment) => ({ tool_calls: [{ index: 0, function: { arguments: fragment } }] })),
      ];
      const message = { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: step.name, arguments: step.args } }], refusal: null, annotations: [] };
      return { deltas, message, finish: 'tool_calls', completionText: step.args, reasoningTokens: 0, ollama: false };
    }
    case 'tools': {
      const names = toolNames(body.tools);
      const calls = [names[0] ?? 'get_weather', ...(names.length >= 2 ? [names[1] as string] : [])].map((name) => ({ id: randomId('call_'), name }));
      const deltas: Record<string, unknown>[] = [];
      calls.forEach((call, index) => {
        const head = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
        deltas.push(index === 0 ? { role: 'assistant', content: null, tool_calls: [head], refusal: null } : { tool_calls: [head] });
        for (const fragment of ARGUMENT_FRAGMENTS) deltas.push({ tool_calls: [{ index, function: { arguments: fragment } }] });
      });
      const message = {
        role: 'assistant',
        content: null,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: ARGUMENTS } })),
        refusal: null,
        annotations: [],
      };
      return { deltas, message, finish: 'tool_calls', completionText: ARGUMENTS.repeat(calls.length), reasoningTokens: 0, ollama: false };
    }
    case 'reasoning':
    case 'slow-reasoning':
      return textScript(echo, { field: 'reasoning_content', text: 'Let me think about this step by step.' });
    case 'ollama-reasoning': {
      const thought = 'The user wants an answer. I will give one.';
      const names = toolNames(body.tools);
      const deltas: Record<string, unknown>[] = pieces(thought).map((piece) => ({ role: 'assistant', content: '', reasoning: piece }));
      if (names.length === 0) {
        for (const piece of pieces(echo)) deltas.push({ role: 'assistant', content: piece });
        return { deltas, message: { role: 'assistant', content: echo, reasoning: thought }, finish: 'stop', completionText: echo + thought, reasoningTokens: 0, ollama: true };
      }
      const calls = names.slice(0, 2).map((name, index) => ({ id: randomId('call_', 8).toLowerCase(), index, type: 'function', function: { name, arguments: ARGUMENTS } }));
      deltas.push({ role: 'assistant', content: '', tool_calls: calls });
      return {
        deltas,
        message: { role: 'assistant', content: '', reasoning: thought, tool_calls: calls.map(({ index: _index, ...rest }) => rest) },
        finish: 'tool_calls',
        completionText: thought + ARGUMENTS,
        reasoningTokens: 0,
        ollama: true,
      };
    }
    case 'think-tags':
      return textScript('<think>pondering</think>The answer.');
    case 'python':
      return textScript(PYTHON_ANSWER);
    default:
      return textScript(echo);
  }
}

async function answer(ex: Exchange, model: string, body: ChatBody): Promise<void> {
  const { res } = ex;
  const s = script(model, body);
  const id = s.ollama ? `chatcmpl-${Math.floor(Math.random() * 1000)}` : randomId('chatcmpl-', 29);
  const created = Math.floor(Date.now() / 1000);
  const fingerprint = s.ollama ? 'fp_ollama' : 'fp_fake0001';
  const promptTokens = tokenCount(allText(body as { messages?: unknown }));
  const completionTokens = tokenCount(s.completionText);
  const usage = s.ollama
    ? { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens }
    : {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: s.reasoningTokens, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      };
  const delayMs = model === 'slow' ? 200 : model === 'slow-reasoning' ? 300 : model === 'paced' ? 5 : 0;

  if (body.stream !== true) {
    if (delayMs) await ex.sleep(delayMs);
    if (ex.gone) return;
    const send = model === 'drop' ? (b: unknown, h: Record<string, string>) => sendJsonCut(ex, b, h) : (b: unknown, h: Record<string, string>) => sendJson(res, 200, b, h);
    return send({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: s.message, logprobs: null, finish_reason: s.finish }],
      usage,
      ...(s.ollama ? {} : { service_tier: 'default' }),
      system_fingerprint: fingerprint,
    }, { 'x-request-id': randomId('req_') });
  }

  const includeUsage = body.stream_options?.include_usage === true;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': randomId('req_') });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: fingerprint, choices, ...(includeUsage && !s.ollama ? { usage: null } : {}), ...extra })}\n\n`;
  const events = s.deltas.map((delta) => chunk([{ index: 0, delta, logprobs: null, finish_reason: null }]));
  events.push(chunk([{ index: 0, delta: s.ollama ? { role: 'assistant', content: '' } : {}, logprobs: null, finish_reason: s.finish }]));
  if (includeUsage) events.push(chunk([], { usage }));
  events.push('data: [DONE]\n\n');

  let sent = 0;
  for (const event of events) {
    if (ex.gone) return;
    if (delayMs && sent > 0) await ex.sleep(delayMs);
    if (ex.gone) return;
    await write(ex, event);
    sent++;
    if (model === 'drop' && sent === 2) {
      ex.req.socket.destroy();
      return;
    }
  }
  res.end();
}

const ERROR_TYPES: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Invalid request (fake upstream).', type: 'invalid_request_error', code: null },
  401: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { message: 'You are not allowed to do this (fake upstream).', type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
  429: { message: 'Rate limit reached for requests (fake upstream).', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request (fake upstream).', type: 'server_error', code: null },
  503: { message: 'The engine is currently overloaded (fake upstream).', type: 'server_error', code: null },
};

function sendError(ex: Exchange, status: number): void {
  const e = ERROR_TYPES[status] ?? { message: `Fake upstream error ${status}.`, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  const headers: Record<string, string> = { 'x-request-id': randomId('req_') };
  if (status === 429) headers['retry-after'] = headerOne(ex.req.headers['x-fake-retry-after']) ?? '1';
  sendJson(ex.res, status, envelope(e.message, e.type, e.code), headers);
}

function envelope(message: string, type: string, code: string | null) {
  return { error: { message, type, param: null, code } };
}

function headerOne(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
