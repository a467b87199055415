/**
 * What the ingest worker (services/ingest-worker) uses of this package: the chat schema's
 * connection, the event outbox, the chat settings it follows, and the knowledge pipeline it runs
 * (extract → chunk → embed → store). The pipeline lives here because the chat worker runs its
 * other half (queries embed with the same embedder, files are enqueued and read back here).
 */
export { openChatDb } from './db.ts';
export { Outbox } from './events/outbox.ts';
export { createEmbedder } from './retrieval/embedder.ts';
export { tokenEncoding, type ChunkOptions } from './retrieval/chunk.ts';
export { parseSettings, SETTINGS_GROUP, type ChatSettings } from './config/settings.ts';
export { markFailed, runIngestJob } from './knowledge/ingest.ts';
export { ensureIngestConsumer, type IngestJob } from './knowledge/ingest-queue.ts';
export { localUploadStore } from './knowledge/uploads.ts';
