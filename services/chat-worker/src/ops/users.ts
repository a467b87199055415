import type { OpTable } from '../context.ts';

export const usersOps: OpTable = {};
