import { catalog } from './catalog-kit.ts';

/** The chat platform's knowledge bases (/api/v1/knowledge): bases, access grants, files, directories, folder sync, export; spread into CHAT_CATALOG (catalog.ts). */
export const KNOWLEDGE_OPS = catalog({});
