import { z } from 'zod';
import { streamContract } from '../catalog.ts';
import { ChatOpRequest } from './bus.ts';
import type { ChatEventName } from './events.ts';

/**
 * `POST /api/chat/completions` (and `/api/v1/chat/completions`): the edge authenticates and sends
 * the body in the usual envelope; the chat worker answers with a stream whose first frame is the
 * HTTP status and content type, then the exact bytes for the client — Server-Sent Events
 * (`data: {chunk}\n\n` … `data: [DONE]\n\n`) when streaming, the JSON body otherwise. Errors found
 * before the first byte come as an error frame (the edge answers `{"detail": …}` with the status);
 * errors after it are written into the stream by the worker itself. The edge cancels the stream
 * when the client goes away, and the worker cancels the upstream request in turn.
 */
export const ChatCompletionMeta = z.object({
  status: z.number().int().min(100).max(599),
  contentType: z.string(),
});
export const ChatCompletionEnd = z.object({});

export const chatCompletionsContract = streamContract('chat.completions.create', 1, ChatOpRequest, ChatCompletionMeta, ChatCompletionEnd);

/** What a malformed completion request is told (400, Open WebUI's `{"detail": …}`). */
export const COMPLETION_ERRORS = {
  body: 'The request body must be a JSON object.',
  messages: 'messages must be a list of messages, each with a role',
} as const;

/** A string Open WebUI reads only when it is a non-empty one; anything else reads as absent (null). */
const givenText = z.unknown().transform((v) => (typeof v === 'string' && v !== '' ? v : null));
/** An object Open WebUI reads only when it is one; anything else reads as absent (null). */
const givenObject = z.unknown().transform((v) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null));

/**
 * The part of a completion request read before anything else: that it is an object, and its
 * model (a missing or empty one is then "Model not found", as an unknown one).
 */
export const ChatCompletionHead = z.looseObject({ model: givenText }, { error: COMPLETION_ERRORS.body });

/**
 * Open WebUI's completion request: its own fields as the worker reads them, every other field
 * kept as sent (they go upstream). Only the body's shape and `messages` can fail; the other own
 * fields are read leniently, as Open WebUI does. `files` / `metadata.files` are read by retrieval
 * (chat-worker retrieval/rag.ts ragItems).
 */
export const ChatCompletionForm = ChatCompletionHead.extend({
  messages: z.array(z.looseObject({ role: z.string() })),
  /** Streamed when true, unless `params.stream_response` says otherwise. */
  stream: z.unknown(),
  params: givenObject,
  /** A stored chat (not `local:` / `channel:` ids). */
  chat_id: givenText,
  /** The user message this turn writes (else the request's last user message). */
  user_message: givenObject,
  parent_id: givenText,
  features: z.unknown(),
});
export type ChatCompletionForm = z.output<typeof ChatCompletionForm>;

/** The two paths Open WebUI serves completions on. */
export const CHAT_COMPLETION_PATHS = ['/api/chat/completions', '/api/v1/chat/completions'] as const;

/** What a completion may write: its messages, the chat's settled reply, an automatic compaction. */
export const CHAT_COMPLETION_EVENTS = ['message.created', 'message.updated', 'chat.updated', 'chat.compacted'] as const satisfies readonly ChatEventName[];
