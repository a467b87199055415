/**
 * The request's side of a completion: which of Open WebUI's body fields and message keys stay
 * home, how `params` become upstream body fields, and the small message edits (system prompt,
 * bookkeeping keys left out). Pure functions of the request, apart from the handler
 * (../completions.ops.ts) so they read and test without a bus or a database.
 */

export type Message = Record<string, unknown> & { role?: unknown; content?: unknown };

/** Fields of Open WebUI's request body that are its own, never the upstream's. */
const OWUI_FIELDS = new Set([
  'model', 'messages', 'stream', 'params', 'chat_id', 'id', 'parent_id', 'user_message', 'session_id', 'features',
  'tool_ids', 'files', 'filter_ids', 'skill_ids', 'terminal_id', 'tool_servers', 'folder_id', 'variables',
  'background_tasks', 'regeneration_prompt', 'assistant_message_id', 'model_item', 'message_ids', 'metadata', 'direct',
  'task_id', 'task_ids',
]);

/** Bookkeeping keys Open WebUI clients put on messages; upstreams do not know them. */
const MESSAGE_BOOKKEEPING = new Set([
  'id', 'parentId', 'childrenIds', 'timestamp', 'models', 'model', 'modelName', 'modelIdx', 'done', 'usage', 'info',
  'contextSummary', 'context_summary', 'files', 'sources', 'statusHistory', 'error', 'output', 'selectedModelId', 'arena',
  'userContext', 'lastSentence', 'followUps', 'annotation', 'merged',
]);


/** Open WebUI's apply_model_params_to_body_openai: request params that become body fields. */
const PARAM_FIELDS = ['temperature', 'top_p', 'min_p', 'max_tokens', 'frequency_penalty', 'presence_penalty', 'reasoning_effort', 'seed', 'stop', 'logit_bias', 'response_format'] as const;

export const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);
export const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** Python's `bytes(s, "utf-8").decode("unicode_escape")` for the escapes people write in stop sequences. */
function unicodeEscape(s: string): string {
  const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v', '0': '\0' };
  return s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (m, e: string) => {
    if (e[0] === 'x' || e[0] === 'u' || e[0] === 'U') return e.length > 1 ? String.fromCodePoint(parseInt(e.slice(1), 16)) : m;
    return simple[e] ?? m;
  });
}

/** Request params → upstream body fields (a null param is left out, as Open WebUI skips it). */
export function applyParams(body: Record<string, unknown>, params: Record<string, unknown>): void {
  for (const key of PARAM_FIELDS) {
    const v = params[key];
    if (v === null || v === undefined) continue;
    if (key === 'stop') body.stop = Array.isArray(v) ? v.map((s) => (typeof s === 'string' ? unicodeEscape(s) : s)) : v;
    else body[key] = v;
  }
  const custom = params.custom_params;
  if (isObject(custom)) Object.assign(body, custom);
}


/** A message for the upstream: Open WebUI's bookkeeping keys left out. */
export function forUpstream(m: Message): Message {
  const out: Message = {};
  for (const [k, v] of Object.entries(m)) if (!MESSAGE_BOOKKEEPING.has(k)) out[k] = v;
  return out;
}

export function lastIndexOf<T>(xs: readonly T[], pred: (x: T) => boolean): number {
  for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i]!)) return i;
  return -1;
}

/** Open WebUI's add_or_update_system_message(…, append=False): text before the system content. */
export function prependToSystem(messages: Message[], text: string): Message[] {
  const out = [...messages];
  const first = out[0];
  if (first && first.role === 'system') out[0] = { ...first, content: `${text}\n${typeof first.content === 'string' ? first.content : String(first.content ?? '')}` };
  else out.unshift({ role: 'system', content: text });
  return out;
}

/** Text of the system messages (what compaction counts as the system prompt). */
export const systemText = (ms: Message[]): string => ms.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

/** The body sent upstream: the request minus Open WebUI's own fields, its params applied, the conversation built for it. */
export function upstreamBodyOf(body: Record<string, unknown>, params: Record<string, unknown>, messages: Message[]): Record<string, unknown> {
  const upstreamBody: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!OWUI_FIELDS.has(k)) upstreamBody[k] = v;
  applyParams(upstreamBody, params);
  upstreamBody.messages = messages;
  return upstreamBody;
}
