import type { OpTable } from '../context.ts';

/** Handlers of the catalog's retrieval operations (contracts/src/chat/catalog-retrieval.ts). */
export const retrievalOps = {} satisfies OpTable;
