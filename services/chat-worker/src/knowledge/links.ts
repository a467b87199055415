import { randomUUID } from 'node:crypto';
import type { Tx, UserRow } from '../context.ts';
import type { Emit } from '../events/outbox.ts';

/**
 * Linking a file into a knowledge base, for every path that does it: `file/add` and `files/batch/add`
 * (knowledge.ops.ts) and an upload that names `metadata.knowledge_id` (the 0.10.2 folder upload
 * links the file once it is processed). The caller has checked write access to the base and read
 * access to the file; `directoryId` must be a directory of that base (null: the root).
 * Idempotent: a file already in the base keeps its place, and no second event is written.
 * The emitting operation must list `knowledge.file.added` among its events.
 */
export async function linkFile(
  tx: Tx,
  emit: Emit,
  actor: UserRow,
  link: { knowledgeId: string; fileId: string; filename: string; directoryId: string | null },
  t: number,
): Promise<boolean> {
  const rows = await tx`
    insert into knowledge_file (id, knowledge_id, file_id, directory_id, user_id, created_at, updated_at)
    values (${randomUUID()}, ${link.knowledgeId}, ${link.fileId}, ${link.directoryId}, ${actor.id}, ${t}, ${t})
    on conflict (knowledge_id, file_id) do nothing returning id`;
  if (!rows.length) return false;
  await emit(tx, 'knowledge.file.added', {
    actor,
    subject: { type: 'file', id: link.fileId },
    data: { knowledge_id: link.knowledgeId, file_id: link.fileId, directory_id: link.directoryId, filename: link.filename },
  });
  return true;
}

/** Whether `directoryId` is a directory of `knowledgeId` (null and '' stand for the root). */
export async function directoryInBase(tx: Tx, knowledgeId: string, directoryId: string | null | undefined): Promise<boolean> {
  if (!directoryId) return true;
  return (await tx`select 1 from knowledge_directory where id = ${directoryId} and knowledge_id = ${knowledgeId}`).length > 0;
}
