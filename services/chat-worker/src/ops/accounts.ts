import type { OpTable } from '../context.ts';

export const accountsOps: OpTable = {};
