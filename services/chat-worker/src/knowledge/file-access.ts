import type { Sql } from 'postgres';
import { grantReaches } from '../access.ts';
import type { UserRow } from '../context.ts';

/** A file row as the files operations read it. */
export interface FileRow {
  id: string;
  user_id: string;
  hash: string | null;
  filename: string;
  path: string | null;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
  access_control: Record<string, unknown> | null;
  created_at: number;
  updated_at: number;
}
export const FILE_COLUMNS = ['id', 'user_id', 'hash', 'filename', 'path', 'data', 'meta', 'access_control', 'created_at', 'updated_at'] as const;

/**
 * Open WebUI's file rule (files.py + has_access_to_file): the owner and admins always; anyone else
 * through a knowledge base holding the file that they own or hold a grant on (`read` for reading,
 * `write` for changing or deleting). Null when the file does not exist or the caller may not: the
 * operations answer 404 either way, so a stranger learns nothing.
 */
export async function accessibleFile(sql: Sql, user: UserRow, fileId: string, need: 'read' | 'write'): Promise<FileRow | null> {
  const [file] = await sql<FileRow[]>`select ${sql(FILE_COLUMNS)} from file where id = ${fileId}`;
  if (!file) return null;
  if (file.user_id === user.id || user.role === 'admin') return file;
  const [via] = await sql`
    select 1 from knowledge_file kf join knowledge k on k.id = kf.knowledge_id
    where kf.file_id = ${fileId}
      and (k.user_id = ${user.id} or exists (
        select 1 from access_grant g
        where g.resource_type = 'knowledge' and g.resource_id = k.id
          and (${need} = 'read' or g.permission = 'write') and ${grantReaches(sql, user.id)}))
    limit 1`;
  return via ? file : null;
}
