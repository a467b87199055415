import type { OpTable } from '../context.ts';

/** Handlers of the catalog's knowledge operations (contracts/src/chat/catalog-knowledge.ts). */
export const knowledgeOps = {} satisfies OpTable;
