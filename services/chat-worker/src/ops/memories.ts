import type { OpTable } from '../context.ts';

export const memoriesOps: OpTable = {};
