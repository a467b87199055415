import { catalog } from './catalog-kit.ts';

/** The chat platform's retrieval (/api/v1/retrieval): query a document or collections, process text and files, config; spread into CHAT_CATALOG (catalog.ts). */
export const RETRIEVAL_OPS = catalog({});
