import { fail, type OpContext } from './context.ts';
import type { ChatRow } from './chat-store.ts';

/*
 * ─── TEMPORARY STUB ─────────────────────────────────────────────────────────────────────────
 * Written by the chats helper so `POST /api/v1/chats/{id}/compact` (ops/chats.ts) has something
 * to call. The completions helper owns this file and replaces it with the real compaction (it
 * needs the upstream model). Keep the exported names and signature:
 *   compactChat(ctx: OpContext, chat: ChatRow, opts: { model?: string; force: boolean }): Promise<CompactResult>
 * The route passes `force: true` and the model it resolved (body `model`, else the newest
 * assistant message's model on the current branch, else `chat.models[0]`). It answers
 * 404/409/400 itself before calling (not the owner, a reply still generating, no model).
 * The real implementation saves the summary with saveContextSummary (chat-store.ts) and emits
 * `chat.compacted` (data {dropped_messages}) in that same transaction.
 * ─────────────────────────────────────────────────────────────────────────────────────────────
 */

/** Open WebUI's answer to a compaction (reference §6). */
export interface CompactResult {
  ok: true;
  compacted: boolean;
  /** Why nothing was compacted: `disabled`, `empty`, `too_short`. */
  reason?: string;
  dropped_messages: number;
  kept_messages: number;
  summary_chars: number;
}

export async function compactChat(ctx: OpContext, _chat: ChatRow, _opts: { model?: string; force: boolean }): Promise<CompactResult> {
  if (!(await ctx.settings()).ENABLE_CONTEXT_COMPACTION) {
    return { ok: true, compacted: false, reason: 'disabled', dropped_messages: 0, kept_messages: 0, summary_chars: 0 };
  }
  return fail(501, 'Context compaction is not available yet.');
}
