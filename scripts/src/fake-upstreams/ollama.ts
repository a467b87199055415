import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { allText, type Exchange, type FakeOptions, type FakeUpstream, lastUserText, pieces, sendJson, sendJsonCut, startFake, tokenCount, write } from './common.ts';

export type { FakeUpstream, Recorded } from './common.ts';

/**
 * A fake Ollama server (native API: `GET /api/tags`, `POST /api/chat`, `GET /api/version`) on 127.0.0.1,
 * speaking the real wire format: NDJSON streams (`application/x-ndjson`, one object a line, streaming is
 * the default as in Ollama), `message.thinking`, tool calls with object arguments, a final object with
 * `done: true`, `done_reason` and the duration/count fields, errors as `{"error": "…"}` with a status.
 * The request's model (any `:tag` ignored, as `echo` and `echo:latest` are one model) picks the behaviour,
 * mirroring the OpenAI fake:
 * - `echo` (and any unknown model): `echo: <last user text>`;
 * - `tools`: calls the request's first tool (or `get_weather`) with `{"city": "Paris"}`, plus a second call
 *   when 2+ tools were offered; Ollama sends the calls whole in one object;
 * - `reasoning`: `message.thinking` pieces, then the echo (no thinking when the request says `think: false`);
 * - `think-tags`: `<think>pondering</think>The answer.` in the content, the tags split across objects;
 * - `error-<status>`: `{"error": …}` with that status (404 is Ollama's "model … not found");
 * - `error-midstream`: one content object, then `{"error": …}` in the 200 stream;
 * - `slow`: 200 ms before the answer / between stream objects; `drop`: two objects (non-stream: half the
 *   JSON), then the socket is destroyed; `hang`: never answers (close() still ends it).
 * `/api/tags` lists MODELS (or the `models` option) as `<name>:latest`.
 */
export function startFakeOllama(opts: FakeOptions & { /** Listed by /api/tags instead of MODELS (e.g. to list `error-500`). */ models?: string[] } = {}): Promise<FakeUpstream> {
  const listed = opts.models ?? MODELS;
  const expected = opts.apiKey === undefined ? undefined : digest(`Bearer ${opts.apiKey}`);
  return startFake({ ...opts, urlSuffix: '' }, async (ex) => {
    const { req, res, rec } = ex;
    if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
      return sendJson(res, 401, { error: 'unauthorized' });
    }
    const path = rec.path.split('?')[0];
    if (req.method === 'GET' && path === '/api/tags') return sendJson(res, 200, { models: listed.map(tagEntry) });
    if (req.method === 'GET' && path === '/api/version') return sendJson(res, 200, { version: '0.12.6' });
    if (path !== '/api/chat') return sendText(ex, 404, '404 page not found');
    if (req.method !== 'POST') return sendText(ex, 405, '405 method not allowed');
    const body = rec.json as ChatBody | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      rec.body = rec.raw.toString('utf8');
      return sendJson(res, 400, { error: 'invalid character looking for beginning of value' });
    }
    if (typeof body.model !== 'string' || !body.model) return sendJson(res, 400, { error: 'model is required' });
    const name = body.model.split(':')[0] as string;
    const err = /^error-(\d{3})$/.exec(name);
    if (err) return sendError(ex, Number(err[1]), body.model);
    if (name === 'hang') return;
    await answer(ex, name, body);
  });
}

export const MODELS = ['echo', 'tools', 'reasoning', 'think-tags', 'error-midstream', 'slow', 'drop', 'hang'];

interface ChatBody {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  tools?: unknown;
  think?: unknown;
  options?: unknown;
}

function tagEntry(name: string) {
  const digestHex = createHash('sha256').update(name).digest('hex');
  return {
    name: `${name}:latest`,
    model: `${name}:latest`,
    modified_at: '2025-06-01T12:00:00.000000000Z',
    size: 4_661_224_676,
    digest: digestHex,
    details: { parent_model: '', format: 'gguf', family: 'llama', families: ['llama'], parameter_size: '8.0B', quantization_level: 'Q4_0' },
  };
}

/** The message each streamed object carries; `final` is the whole message for the non-stream answer. */
interface Script {
  messages: Record<string, unknown>[];
  final: Record<string, unknown>;
  completionText: string;
  /** Send `{"error": …}` after the scripted objects instead of the done object. */
  failAfter?: boolean;
}

function toolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .map((t: unknown) => (t as { function?: { name?: unknown } } | undefined)?.function?.name)
    .filter((n): n is string => typeof n === 'string');
}

function script(name: string, body: ChatBody): Script {
  const echo = `echo: ${lastUserText(body.messages)}`;
  const text = (content: string, split: string[] = pieces(content)): Script => ({
    messages: split.map((piece) => ({ role: 'assistant', content: piece })),
    final: { role: 'assistant', content },
    completionText: content,
  });
  switch (name) {
    case 'tools': {
      const names = toolNames(body.tools);
      const calls = [names[0] ?? 'get_weather', ...(names.length >= 2 ? [names[1] as string] : [])].map((fn, index) => ({
        id: `call_${randomBytes(6).toString('hex')}`,
        function: { index, name: fn, arguments: { city: 'Paris' } },
      }));
      const message = { role: 'assistant', content: '', tool_calls: calls };
      return { messages: [message], final: message, completionText: JSON.stringify(calls) };
    }
    case 'reasoning': {
      const thought = 'Let me think about this step by step.';
      if (body.think === false) return text(echo);
      const messages: Record<string, unknown>[] = pieces(thought).map((piece) => ({ role: 'assistant', content: '', thinking: piece }));
      for (const piece of pieces(echo)) messages.push({ role: 'assistant', content: piece });
      return { messages, final: { role: 'assistant', content: echo, thinking: thought }, completionText: thought + echo };
    }
    case 'think-tags':
      return text('<think>pondering</think>The answer.', ['<thi', 'nk>ponder', 'ing</th', 'ink>The ', 'answer.']);
    case 'error-midstream':
      return { ...text('partial'), failAfter: true };
    default:
      return text(echo);
  }
}

async function answer(ex: Exchange, name: string, body: ChatBody): Promise<void> {
  const { res } = ex;
  const model = String(body.model);
  const s = script(name, body);
  const promptTokens = tokenCount(allText(body as { messages?: unknown }));
  const evalCount = tokenCount(s.completionText);
  const delayMs = name === 'slow' ? 200 : 0;
  const stamp = () => new Date().toISOString().replace('Z', '000Z');
  const done = (message: Record<string, unknown>) => ({
    model,
    created_at: stamp(),
    message,
    done_reason: 'stop',
    done: true,
    total_duration: 2_345_678_901,
    load_duration: 12_345_678,
    prompt_eval_count: promptTokens,
    prompt_eval_duration: 123_456_789,
    eval_count: evalCount,
    eval_duration: 1_234_567_890,
  });

  // Ollama streams unless the request says "stream": false.
  if (body.stream === false) {
    if (delayMs) await ex.sleep(delayMs);
    if (ex.gone) return;
    if (s.failAfter) return sendJson(res, 500, { error: 'llama runner process has terminated: exit status 2' });
    const payload = done(s.final);
    return name === 'drop' ? sendJsonCut(ex, payload) : sendJson(res, 200, payload);
  }

  res.writeHead(200, { 'content-type': 'application/x-ndjson', date: new Date().toUTCString() });
  const lines = s.messages.map((message) => `${JSON.stringify({ model, created_at: stamp(), message, done: false })}\n`);
  lines.push(
    s.failAfter
      ? `${JSON.stringify({ error: 'llama runner process has terminated: exit status 2' })}\n`
      : `${JSON.stringify(done({ role: 'assistant', content: '' }))}\n`,
  );
  let sent = 0;
  for (const line of lines) {
    if (ex.gone) return;
    if (delayMs && sent > 0) await ex.sleep(delayMs);
    if (ex.gone) return;
    await write(ex, line);
    sent++;
    if (name === 'drop' && sent === 2) {
      ex.req.socket.destroy();
      return;
    }
  }
  res.end();
}

const ERRORS: Record<number, (model: string) => string> = {
  400: () => 'invalid request (fake ollama)',
  401: () => 'unauthorized',
  404: (model) => `model "${model}" not found, try pulling it first`,
  429: () => 'too many requests (fake ollama)',
  500: () => 'llama runner process has terminated: exit status 2',
  503: () => 'server busy, please try again. maximum pending requests exceeded',
};

function sendError(ex: Exchange, status: number, model: string): void {
  const message = ERRORS[status]?.(model) ?? `fake ollama error ${status}`;
  sendJson(ex.res, status, { error: message }, status === 429 ? { 'retry-after': '1' } : {});
}

function sendText(ex: Exchange, status: number, text: string): void {
  ex.res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
  ex.res.end(text);
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
