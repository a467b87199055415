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

/** The two paths Open WebUI serves completions on. */
export const CHAT_COMPLETION_PATHS = ['/api/chat/completions', '/api/v1/chat/completions'] as const;

/** What a completion may write: its messages, the chat's settled reply, an automatic compaction. */
export const CHAT_COMPLETION_EVENTS = ['message.created', 'message.updated', 'chat.updated', 'chat.compacted'] as const satisfies readonly ChatEventName[];
