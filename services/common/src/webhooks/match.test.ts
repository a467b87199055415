import { describe, expect, it } from 'vitest';
import { eventUsers, patternMatches, patternProblem, webhookMatches } from './match.ts';

const ev = (event: string, extra: Record<string, unknown> = {}) => ({ event, actor: null, subject: null, data: {}, ...extra }) as never;
const actor = (id: string) => ({ id, name: null, email: null, role: 'user', created_at: 0, updated_at: 0, type: 'user' as const });

describe('webhook matching (Open WebUI 0.10.2 events.py)', () => {
  it('accepts *, prefix.* and known names; refuses the rest', () => {
    for (const p of ['*', 'chat.*', 'knowledge.file.*', 'auth.login', 'gate.opened', 'webhook.*']) expect(patternProblem(p), p).toBeNull();
    expect(patternProblem('chat.exploded')).toMatch(/Unknown event/);
    expect(patternProblem('nothing.*')).toMatch(/Unknown event pattern/);
    expect(patternProblem('Chat.*')).toMatch(/Invalid/);
    expect(patternProblem('chat.**')).toMatch(/Invalid/);
  });

  it('matches a prefix at a dot boundary only', () => {
    expect(patternMatches('chat.*', 'chat.created')).toBe(true);
    expect(patternMatches('chat.*', 'chatter.created')).toBe(false);
    expect(patternMatches('knowledge.file.*', 'knowledge.file.added')).toBe(true);
    expect(patternMatches('auth.login', 'auth.logout')).toBe(false);
  });

  it('reads the users of an event from the actor, a user subject and data.user_id(s)', () => {
    expect(eventUsers(ev('x.y', { actor: actor('a'), subject: { type: 'user', id: 'b' }, data: { user_id: 'c', user_ids: ['d', 'a'] } })).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(eventUsers(ev('x.y', { subject: { type: 'chat', id: 'c1' } }))).toEqual([]);
  });

  it('targets: null = all, [] = only events with no user, else the users (groups expanded by the loader)', () => {
    const base = { enabled: true, events: ['*'] };
    const mine = ev('chat.created', { actor: actor('u1') });
    const nobody = ev('gate.opened');
    expect(webhookMatches({ ...base, targetUsers: null, targetsEmpty: false }, mine)).toBe(true);
    expect(webhookMatches({ ...base, targetUsers: new Set(), targetsEmpty: true }, mine)).toBe(false);
    expect(webhookMatches({ ...base, targetUsers: new Set(), targetsEmpty: true }, nobody)).toBe(true);
    // A group target with no members admits nothing (not "no-user events").
    expect(webhookMatches({ ...base, targetUsers: new Set(), targetsEmpty: false }, nobody)).toBe(false);
    expect(webhookMatches({ ...base, targetUsers: new Set(['u1']), targetsEmpty: false }, mine)).toBe(true);
    expect(webhookMatches({ ...base, targetUsers: new Set(['u2']), targetsEmpty: false }, mine)).toBe(false);
    expect(webhookMatches({ ...base, enabled: false, targetUsers: null, targetsEmpty: false }, mine)).toBe(false);
  });
});
