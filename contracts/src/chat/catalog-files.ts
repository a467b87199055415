import { catalog } from './catalog-kit.ts';

/** The chat platform's files (/api/v1/files): upload, list, get, content, processing status, delete; spread into CHAT_CATALOG (catalog.ts). */
export const FILES_OPS = catalog({});
