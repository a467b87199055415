import type { OpTable } from '../context.ts';

/**
 * The chat routes part 1 needed (create, get) moved to ops/chats.ts with the rest of chat CRUD;
 * main.ts registers that table. This empty table remains only because ops/folders.ts still
 * spreads it — drop the import there and this file can go.
 */
export const chatsOps: OpTable = {};
