import type { OpTable } from '../context.ts';

export const groupsOps: OpTable = {};
