// Settings → Chats: export every chat of mine (`GET /api/v1/chats/all`, NDJSON, one ChatResponse a
// line), import Open WebUI's export file (`POST /api/v1/chats/import`), archive all, delete all.
import { api, request, type Body, type Reply } from '../client.ts';

export type ExportedChat = Reply<'chats.import'>[number];
export type ChatImport = Body<'chats.import'>['chats'][number];

/** Every chat of mine, newest first, as Open WebUI's export file holds them (a JSON array). */
export async function exportAllChats(): Promise<ExportedChat[]> {
  const text = await (await request('GET', '/api/v1/chats/all')).text();
  return text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as ExportedChat);
}

export const importChats = (chats: ChatImport[]): Promise<Reply<'chats.import'>> => api.post<Reply<'chats.import'>>('/api/v1/chats/import', { chats });
export const archiveAllChats = (): Promise<Reply<'chats.archiveAll'>> => api.post<Reply<'chats.archiveAll'>>('/api/v1/chats/archive/all');
export const deleteAllChats = (): Promise<Reply<'chats.deleteAll'>> => api.del<Reply<'chats.deleteAll'>>('/api/v1/chats/');

/**
 * The chats of an export file: Open WebUI's (an array of ChatResponse, each with its `chat`) or an
 * array of bare chat objects (`{title, history, messages…}`); anything else is refused.
 */
export function chatsFromFile(data: unknown): ChatImport[] {
  if (!Array.isArray(data)) throw new Error('The file is not a chat export (a JSON array of chats).');
  return data.map((item, i) => {
    if (!item || typeof item !== 'object') throw new Error(`Entry ${i + 1} is not a chat.`);
    const o = item as Record<string, unknown>;
    const chat = o['chat'] && typeof o['chat'] === 'object' ? (o['chat'] as Record<string, unknown>) : 'history' in o || 'messages' in o ? o : null;
    if (!chat) throw new Error(`Entry ${i + 1} is not a chat.`);
    const int = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) ? v : null);
    return {
      chat,
      meta: o['meta'] && typeof o['meta'] === 'object' ? (o['meta'] as Record<string, unknown>) : {},
      pinned: o['pinned'] === true,
      folder_id: null,
      created_at: int(o['created_at']),
      updated_at: int(o['updated_at']),
    };
  });
}
