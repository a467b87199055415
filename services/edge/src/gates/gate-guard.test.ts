import { describe, expect, it } from 'vitest';
import { keyDigest } from '@gatehouse/common';
import { verdictFor } from './gate-guard.ts';
import type { AppliedState } from './live-gates.ts';

const at = new Date().toISOString();
const open: AppliedState = { status: 'ready', revision: 1, at, state: { v: 1, state: 'open', changedAt: at, changedBy: 't' } };
const enforced = (...keys: string[]): AppliedState => ({
  status: 'ready',
  revision: 2,
  at,
  state: { v: 1, state: 'enforced', keyDigests: keys.map(keyDigest), changedAt: at, changedBy: 't' },
});
const unknown: AppliedState = { status: 'unknown', reason: 'not loaded', revision: 0, at };

describe('verdictFor', () => {
  it('open lets everything through, with or without a key', () => {
    expect(verdictFor(open, undefined)).toBe('allow');
    expect(verdictFor(open, 'anything')).toBe('allow');
  });
  it('enforced needs one of the accepted keys', () => {
    expect(verdictFor(enforced('k1'), 'k1')).toBe('allow');
    expect(verdictFor(enforced('k1', 'k2'), 'k2')).toBe('allow');
    expect(verdictFor(enforced('k1'), 'k2')).toBe('unauthorized');
    expect(verdictFor(enforced('k1'), undefined)).toBe('unauthorized');
  });
  it('an unknown state fails closed even for a key that used to work', () => {
    expect(verdictFor(unknown, 'k1')).toBe('unavailable');
    expect(verdictFor(unknown, undefined)).toBe('unavailable');
  });
});
