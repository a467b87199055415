import type { OpTable } from '../context.ts';

/** Handlers of the catalog's files operations (contracts/src/chat/catalog-files.ts). */
export const filesOps = {} satisfies OpTable;
