import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 string (Anthropic ids look like `msg_01XFDUDYJgAACzvnptvVoYEL`, 24 chars after the prefix). */
export function randomId(length = 24): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % ALPHABET.length];
  return out;
}

/** `msg_<upstream id>` (kept as is when it already starts with `msg_`), or `msg_<random>`. */
export function messageId(upstreamId?: string | null): string {
  if (!upstreamId) return `msg_${randomId()}`;
  return upstreamId.startsWith('msg_') ? upstreamId : `msg_${upstreamId}`;
}

export function toolUseId(upstreamId?: string | null): string {
  return upstreamId ? upstreamId : `toolu_${randomId()}`;
}

/** OpenAI caps function names at 64 characters; Anthropic (and Claude Code's MCP tools) do not. */
export const OPENAI_MAX_TOOL_NAME = 64;

/**
 * Names longer than 64 characters become `<first 55 chars>_<first 8 hex of sha256(name)>`, the
 * scheme LiteLLM uses (`truncate_tool_name`): stable across requests, so a name in the history,
 * in `tools` and in `tool_choice` always maps to the same upstream name.
 */
export function openAIToolName(name: string): string {
  if (name.length <= OPENAI_MAX_TOOL_NAME) return name;
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}

/** upstream (truncated) name → original Anthropic name; only truncated names appear. */
export type ToolNameMap = ReadonlyMap<string, string>;

/** Reverse map for the names `anthropicToOpenAI` truncated (pass it to the response translators). */
export function toolNameMap(tools: ReadonlyArray<{ name: string }> | undefined): ToolNameMap {
  const map = new Map<string, string>();
  for (const t of tools ?? []) {
    const short = openAIToolName(t.name);
    if (short !== t.name) map.set(short, t.name);
  }
  return map;
}

export function restoreToolName(name: string, map?: ToolNameMap): string {
  return map?.get(name) ?? name;
}
