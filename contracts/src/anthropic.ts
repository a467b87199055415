import { z } from 'zod';

/*
 * Anthropic Messages API wire contract (`POST /v1/messages`, `POST /v1/messages/count_tokens`).
 *
 * Request schemas are lenient: every object is a `z.looseObject`, so fields this file does not know
 * (cache_control, citations, service_tier, container, mcp_servers, output_config, newer block
 * types …) pass through untouched and newer clients are not rejected. Content blocks of an unknown
 * `type` pass through as `AnthropicUnknownContentBlockParam`; translators skip what they cannot express.
 *
 * Error messages are written in the style Anthropic's own API uses ("max_tokens: Field required",
 * "messages.0.role: Input should be 'user', 'assistant' or 'system'"); they carry no path themselves. Use
 * `anthropicIssueMessage(error)` to get `<path>: <message>` for the first issue.
 *
 * Response, content-block, SSE-event and error-envelope shapes are plain TS types that follow
 * `@anthropic-ai/sdk` 0.71.2 (`resources/messages/messages.ts`, `resources/shared.ts`).
 */

// ------------------------------------------------------------------------------------------------
// Error-message helpers

type RawIssue = { input?: unknown };

/** "Field required" when absent, otherwise "Input should be <what>". */
const expect =
  (what: string) =>
  (iss: RawIssue): string =>
    iss.input === undefined ? 'Field required' : `Input should be ${what}`;

const str = () => z.string({ error: expect('a valid string') });
const bool = () => z.boolean({ error: expect('a valid boolean') });
const num = () => z.number({ error: expect('a valid number') });
const int = () =>
  z
    .number({ error: expect('a valid integer') })
    .int({ error: 'Input should be a valid integer' });
const dict = () => z.record(z.string(), z.unknown(), { error: expect('a valid dictionary') });

function tagList(tags: readonly string[]): string {
  return tags.map((t) => `'${t}'`).join(', ');
}

/** Copy the issues of a nested parse into the current context (paths stay relative). */
function forwardIssues(ctx: z.RefinementCtx, error: z.ZodError): void {
  for (const issue of error.issues) {
    ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path as PropertyKey[] });
  }
}

type TaggedSchemas = Record<string, z.ZodType>;
type OutputOf<M extends TaggedSchemas> = { [K in keyof M]: z.output<M[K]> }[keyof M];

/**
 * A `{type: ...}` object dispatched on its tag. Unlike `z.union`, a known tag with a bad field
 * reports the nested path (`messages.0.content.1.text: Field required`), not "Invalid input".
 * With `fallback`, unknown tags pass through as loose objects; without it they are rejected.
 */
function tagged<M extends TaggedSchemas>(
  schemas: M,
  fallback: true,
): z.ZodType<OutputOf<M> | AnthropicUnknownContentBlockParam, unknown>;
function tagged<M extends TaggedSchemas>(schemas: M, fallback: false): z.ZodType<OutputOf<M>, unknown>;
function tagged(schemas: TaggedSchemas, fallback: boolean): z.ZodType {
  const tags = Object.keys(schemas);
  return z
    .looseObject({ type: str() }, { error: expect('a valid dictionary') })
    .transform((value, ctx) => {
      const schema = schemas[value.type];
      if (!schema) {
        if (fallback) return value;
        ctx.addIssue({
          code: 'custom',
          path: ['type'],
          message: `Input tag '${value.type}' found using 'type' does not match any of the expected tags: ${tagList(tags)}`,
        });
        return z.NEVER;
      }
      const parsed = schema.safeParse(value);
      if (!parsed.success) {
        forwardIssues(ctx, parsed.error);
        return z.NEVER;
      }
      return parsed.data;
    });
}

/** `string | T[]`, reporting nested paths for array items (a plain union would not). */
function stringOrList<T extends z.ZodType>(item: T, what: string): z.ZodType<string | z.output<T>[], unknown> {
  const list = z.array(item);
  return z.unknown().transform((value, ctx): string | z.output<T>[] => {
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) {
      const parsed = list.safeParse(value);
      if (parsed.success) return parsed.data;
      forwardIssues(ctx, parsed.error);
      return z.NEVER;
    }
    ctx.addIssue({ code: 'custom', message: value === undefined ? 'Field required' : `Input should be ${what}` });
    return z.NEVER;
  });
}

// ------------------------------------------------------------------------------------------------
// Content blocks (request side)

/** A block of a type this contract does not model; passed through unchanged. */
export type AnthropicUnknownContentBlockParam = { type: string; [key: string]: unknown };

export const AnthropicTextBlockParam = z.looseObject({ type: z.literal('text'), text: str() });
export type AnthropicTextBlockParam = z.output<typeof AnthropicTextBlockParam>;

export const AnthropicBase64ImageSource = z.looseObject({
  type: z.literal('base64'),
  media_type: str(),
  data: str(),
});
export const AnthropicUrlImageSource = z.looseObject({ type: z.literal('url'), url: str() });
/** base64 and url are modelled; other source types (e.g. `file`) pass through. */
export const AnthropicImageSource = tagged({ base64: AnthropicBase64ImageSource, url: AnthropicUrlImageSource }, true);
export type AnthropicImageSource = z.output<typeof AnthropicImageSource>;

export const AnthropicImageBlockParam = z.looseObject({ type: z.literal('image'), source: AnthropicImageSource });
export type AnthropicImageBlockParam = z.output<typeof AnthropicImageBlockParam>;

/** Document sources (base64 PDF, plain text, content blocks, url, file) stay loose. */
export const AnthropicDocumentBlockParam = z.looseObject({
  type: z.literal('document'),
  source: z.looseObject({ type: str() }, { error: expect('a valid dictionary') }),
  title: str().nullish(),
  context: str().nullish(),
});
export type AnthropicDocumentBlockParam = z.output<typeof AnthropicDocumentBlockParam>;

export const AnthropicToolUseBlockParam = z.looseObject({
  type: z.literal('tool_use'),
  id: str(),
  name: str(),
  input: dict(),
});
export type AnthropicToolUseBlockParam = z.output<typeof AnthropicToolUseBlockParam>;

/** Blocks allowed inside `tool_result.content` (text and image modelled, others pass through). */
export const AnthropicToolResultContentBlock = tagged({ text: AnthropicTextBlockParam, image: AnthropicImageBlockParam }, true);
export type AnthropicToolResultContentBlock = z.output<typeof AnthropicToolResultContentBlock>;

export const AnthropicToolResultBlockParam = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: str(),
  content: stringOrList(AnthropicToolResultContentBlock, 'a valid string or a list of content blocks').optional(),
  is_error: bool().optional(),
});
export type AnthropicToolResultBlockParam = z.output<typeof AnthropicToolResultBlockParam>;

export const AnthropicThinkingBlockParam = z.looseObject({
  type: z.literal('thinking'),
  thinking: str(),
  // Anthropic requires it; optional here because replays from translated upstreams may lack it.
  signature: str().optional(),
});
export type AnthropicThinkingBlockParam = z.output<typeof AnthropicThinkingBlockParam>;

export const AnthropicRedactedThinkingBlockParam = z.looseObject({ type: z.literal('redacted_thinking'), data: str() });
export type AnthropicRedactedThinkingBlockParam = z.output<typeof AnthropicRedactedThinkingBlockParam>;

export const AnthropicContentBlockParam = tagged(
  {
    text: AnthropicTextBlockParam,
    image: AnthropicImageBlockParam,
    document: AnthropicDocumentBlockParam,
    tool_use: AnthropicToolUseBlockParam,
    tool_result: AnthropicToolResultBlockParam,
    thinking: AnthropicThinkingBlockParam,
    redacted_thinking: AnthropicRedactedThinkingBlockParam,
  },
  true,
);
export type AnthropicKnownContentBlockParam =
  | AnthropicTextBlockParam
  | AnthropicImageBlockParam
  | AnthropicDocumentBlockParam
  | AnthropicToolUseBlockParam
  | AnthropicToolResultBlockParam
  | AnthropicThinkingBlockParam
  | AnthropicRedactedThinkingBlockParam;
export type AnthropicContentBlockParam = AnthropicKnownContentBlockParam | AnthropicUnknownContentBlockParam;

type KnownBlockMap = {
  text: AnthropicTextBlockParam;
  image: AnthropicImageBlockParam;
  document: AnthropicDocumentBlockParam;
  tool_use: AnthropicToolUseBlockParam;
  tool_result: AnthropicToolResultBlockParam;
  thinking: AnthropicThinkingBlockParam;
  redacted_thinking: AnthropicRedactedThinkingBlockParam;
};

/** Type guard that narrows a (possibly unknown) content block by its tag. */
export function isAnthropicBlock<K extends keyof KnownBlockMap>(
  block: { type: string },
  type: K,
): block is KnownBlockMap[K] {
  return block.type === type;
}

// ------------------------------------------------------------------------------------------------
// Request

/**
 * `system` is a mid-conversation system message (Anthropic's "Mid-conversation system messages":
 * instructions appended later in the conversation, applying from that point on). Its placement
 * rules (after a user turn, not first, never two in a row) are the first-party API's to judge for
 * native requests; translated providers take it wherever it stands.
 */
export const AnthropicMessageParam = z.looseObject(
  {
    role: z.enum(['user', 'assistant', 'system'], {
      error: (iss) => (iss.input === undefined ? 'Field required' : "Input should be 'user', 'assistant' or 'system'"),
    }),
    content: stringOrList(AnthropicContentBlockParam, 'a valid string or a list of content blocks'),
  },
  { error: expect('a valid dictionary') },
);
export type AnthropicMessageParam = z.output<typeof AnthropicMessageParam>;

export const AnthropicToolParam = z
  .looseObject(
    {
      name: str().min(1, 'String should have at least 1 character'),
      description: str().optional(),
      // Required for custom tools; Anthropic server tools (`{type:"web_search_20250305",…}`) have none.
      input_schema: z.looseObject({}, { error: expect('a valid dictionary') }).optional(),
      type: str().nullish(),
    },
    { error: expect('a valid dictionary') },
  )
  .superRefine((tool, ctx) => {
    const custom = tool.type == null || tool.type === 'custom';
    if (custom && tool.input_schema === undefined) {
      ctx.addIssue({ code: 'custom', path: ['input_schema'], message: 'Field required' });
    }
  });
export type AnthropicToolParam = z.output<typeof AnthropicToolParam>;

const disableParallel = { disable_parallel_tool_use: bool().optional() };
export const AnthropicToolChoice = tagged(
  {
    auto: z.looseObject({ type: z.literal('auto'), ...disableParallel }),
    any: z.looseObject({ type: z.literal('any'), ...disableParallel }),
    tool: z.looseObject({ type: z.literal('tool'), name: str(), ...disableParallel }),
    none: z.looseObject({ type: z.literal('none') }),
  },
  false,
);
export type AnthropicToolChoice = z.output<typeof AnthropicToolChoice>;

export const AnthropicThinkingConfig = tagged(
  {
    enabled: z.looseObject({
      type: z.literal('enabled'),
      // Anthropic itself requires >= 1024; upstreams here are not Anthropic, so only > 0 is checked.
      budget_tokens: int().positive({ error: 'Input should be greater than 0' }),
    }),
    disabled: z.looseObject({ type: z.literal('disabled') }),
    adaptive: z.looseObject({ type: z.literal('adaptive') }),
  },
  false,
);
export type AnthropicThinkingConfig = z.output<typeof AnthropicThinkingConfig>;

const requestShape = {
  model: str().min(1, 'String should have at least 1 character'),
  messages: z.array(AnthropicMessageParam, { error: expect('a valid list') }),
  system: stringOrList(AnthropicTextBlockParam, 'a valid string or a list of text blocks').optional(),
  stream: bool().optional(),
  temperature: num().optional(),
  top_p: num().optional(),
  top_k: int().nonnegative({ error: 'Input should be greater than or equal to 0' }).optional(),
  stop_sequences: z.array(str(), { error: expect('a valid list') }).optional(),
  tools: z.array(AnthropicToolParam, { error: expect('a valid list') }).optional(),
  tool_choice: AnthropicToolChoice.optional(),
  thinking: AnthropicThinkingConfig.optional(),
  metadata: z.looseObject({ user_id: str().nullish() }, { error: expect('a valid dictionary') }).optional(),
};

/** `POST /v1/messages` body. */
export const AnthropicMessagesRequest = z.looseObject(
  {
    ...requestShape,
    max_tokens: int().positive({ error: 'Input should be greater than or equal to 1' }),
  },
  { error: expect('a valid dictionary') },
);
export type AnthropicMessagesRequest = z.output<typeof AnthropicMessagesRequest>;

/** `POST /v1/messages/count_tokens` body: the messages body without `max_tokens`. */
export const AnthropicCountTokensRequest = z.looseObject(requestShape, { error: expect('a valid dictionary') });
export type AnthropicCountTokensRequest = z.output<typeof AnthropicCountTokensRequest>;

export interface AnthropicCountTokensResponse {
  input_tokens: number;
}

/** `<path>: <message>` for the first issue (just `<message>` at the root), e.g. `max_tokens: Field required`. */
export function anthropicIssueMessage(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request';
  const path = issue.path.map(String).join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

// ------------------------------------------------------------------------------------------------
// Response (TS types only)

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal';

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  citations?: unknown[] | null;
}
export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  /** Always present (possibly `""`): Claude Code drops thinking blocks without it. */
  signature: string;
}
export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}
export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock;

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  /** Echoes the model string the client asked for (e.g. `openai/gpt-4o`). */
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

// ------------------------------------------------------------------------------------------------
// SSE events (TS types only)

export type AnthropicContentBlockDelta =
  | { type: 'text_delta'; text: string }
  | { type: 'input_json_delta'; partial_json: string }
  | { type: 'thinking_delta'; thinking: string }
  | { type: 'signature_delta'; signature: string }
  | { type: 'citations_delta'; citation: unknown };

/** `message_delta.usage` is cumulative; the SDK overwrites each non-null field of the snapshot. */
export interface AnthropicMessageDeltaUsage {
  output_tokens: number;
  input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export interface AnthropicMessageStartEvent {
  type: 'message_start';
  message: AnthropicMessage;
}
export interface AnthropicContentBlockStartEvent {
  type: 'content_block_start';
  index: number;
  content_block: AnthropicContentBlock;
}
export interface AnthropicContentBlockDeltaEvent {
  type: 'content_block_delta';
  index: number;
  delta: AnthropicContentBlockDelta;
}
export interface AnthropicContentBlockStopEvent {
  type: 'content_block_stop';
  index: number;
}
export interface AnthropicMessageDeltaEvent {
  type: 'message_delta';
  delta: { stop_reason: AnthropicStopReason | null; stop_sequence: string | null };
  usage: AnthropicMessageDeltaUsage;
}
export interface AnthropicMessageStopEvent {
  type: 'message_stop';
}
export interface AnthropicPingEvent {
  type: 'ping';
}
export interface AnthropicErrorEvent extends AnthropicErrorEnvelope {}

export type AnthropicSSEEvent =
  | AnthropicMessageStartEvent
  | AnthropicContentBlockStartEvent
  | AnthropicContentBlockDeltaEvent
  | AnthropicContentBlockStopEvent
  | AnthropicMessageDeltaEvent
  | AnthropicMessageStopEvent
  | AnthropicPingEvent
  | AnthropicErrorEvent;

// ------------------------------------------------------------------------------------------------
// Errors

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

export interface AnthropicErrorEnvelope {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
  request_id?: string;
}

/**
 * HTTP status → Anthropic `error.type` (docs.claude.com/en/api/errors, @anthropic-ai/sdk `ErrorType`).
 * Choices beyond Anthropic's own table:
 * - 503 → `overloaded_error`: an OpenAI-compatible upstream (vLLM, Ollama, a gateway) answers 503
 *   when it is saturated or starting, which is what Anthropic signals with 529 `overloaded_error`.
 *   The SDK retries any ≥ 500 either way; only the type differs.
 * - 502 → `api_error` (bad gateway is an upstream fault, not load).
 * - 408 → `timeout_error` (like 504).
 * - other 4xx → `invalid_request_error` (Anthropic: "also used for other 4XX status codes"),
 *   other 5xx (and anything else) → `api_error`.
 */
export function anthropicErrorType(status: number): AnthropicErrorType {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 408:
      return 'timeout_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 500:
    case 502:
      return 'api_error';
    case 503:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
  }
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'api_error';
}

/**
 * The first-party API's answer (400 `invalid_request_error`) when a model cannot take a
 * mid-conversation system message. Claude Code recognises this wording and retries the turn
 * without such messages, so a provider that cannot take them answers with exactly this.
 */
export const SYSTEM_ROLE_UNSUPPORTED = "role 'system' is not supported on this model";

/** `{type:"error", error:{type, message}, request_id?}`; `request_id` only when given. */
export function anthropicError(status: number, message: string, requestId?: string): AnthropicErrorEnvelope {
  const envelope: AnthropicErrorEnvelope = { type: 'error', error: { type: anthropicErrorType(status), message } };
  if (requestId) envelope.request_id = requestId;
  return envelope;
}

