import type { OpTable } from '../context.ts';

export const foldersOps: OpTable = {};
