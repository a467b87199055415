import { describe, expect, it } from 'vitest';
import type { ChatEvent } from '@gatehouse/contracts';
import { visibleEvent } from './live-events.ts';

const actor = (id: string) => ({ id, name: id, email: `${id}@example.com`, role: 'user', created_at: 1, updated_at: 1, type: 'user' as const });
const ev = (event: string, actorId: string | null, data: Record<string, unknown> = {}): ChatEvent => ({
  schema: '1', id: 'e1', event, resource: event.split('.')[0]!, operation: event.split('.')[1]!, created_at: 1, instance_id: 'i', version: '0.10.2',
  source: 'api', actor: actorId ? actor(actorId) : null, subject: { type: 'x', id: 's' }, data, message: null,
});

describe('visibleEvent: only what the caller may see', () => {
  it('forwards the caller’s own events unchanged, never another user’s or an actorless one', () => {
    const own = ev('chat.created', 'alice', { title: 't', folder_id: null });
    expect(visibleEvent(own, 'alice')).toBe(own);
    expect(visibleEvent(ev('chat.created', 'bob', { title: 't' }), 'alice')).toBeUndefined();
    expect(visibleEvent(ev('chat.deleted', 'bob', { owner_id: 'alice' }), 'alice')).toBeUndefined();
    expect(visibleEvent(ev('auth.login', null), 'alice')).toBeUndefined();
    expect(visibleEvent(ev('folder.created', 'bob', { owner_id: 'alice' }), 'alice')).toBeUndefined();
  });

  it('forwards a folder share to a grantee (or everyone) without the other grantees or the sharer’s email', () => {
    const share = ev('folder.access_updated', 'bob', { grant_count: 2, user_ids: ['alice', 'carol'] });
    expect(visibleEvent(share, 'alice')).toMatchObject({ actor: { id: 'bob', name: 'bob', email: null, role: null }, data: { grant_count: 2 } });
    expect(visibleEvent(share, 'alice')!.data).not.toHaveProperty('user_ids');
    expect(visibleEvent(share, 'dave')).toBeUndefined();
    expect(visibleEvent(ev('folder.access_updated', 'bob', { grant_count: 1, user_ids: ['*'] }), 'dave')).toBeDefined();
    expect(visibleEvent(ev('folder.access_updated', 'bob', { grant_count: 1 }), 'alice')).toBeUndefined();
    expect(visibleEvent(ev('folder.access_updated', 'bob', { grant_count: 1, user_ids: 'alice' }), 'alice')).toBeUndefined();
  });

  it('forwards a shared folder’s rename, move and delete, and group membership changes, to the users they name', () => {
    for (const name of ['folder.updated', 'folder.parent_updated', 'folder.deleted', 'group.member_added', 'group.member_removed', 'group.updated', 'group.deleted']) {
      const e = ev(name, 'bob', { name: 'n', user_ids: ['alice'] });
      expect(visibleEvent(e, 'alice'), name).toMatchObject({ event: name, actor: { id: 'bob', email: null, role: null }, data: { name: 'n' } });
      expect(visibleEvent(e, 'alice')!.data, name).not.toHaveProperty('user_ids');
      expect(visibleEvent(e, 'carol'), name).toBeUndefined();
      expect(visibleEvent(ev(name, 'bob', { name: 'n' }), 'alice'), name).toBeUndefined();
    }
    // Not every event carries an audience: a chat of someone else's never travels by user_ids.
    expect(visibleEvent(ev('chat.created', 'bob', { title: 't', user_ids: ['alice'] }), 'alice')).toBeUndefined();
  });

  it('tells a user about an admin’s change to their own account, and nobody else', () => {
    const about = (name: string, subjectId: string, data: Record<string, unknown>): ChatEvent => ({ ...ev(name, 'admin', data), subject: { type: 'user', id: subjectId } });
    const role = about('user.role_updated', 'alice', { role: 'pending', previous_role: 'user' });
    expect(visibleEvent(role, 'alice')).toMatchObject({ data: { role: 'pending' }, actor: { id: 'admin', email: null, role: null } });
    expect(visibleEvent(role, 'carol')).toBeUndefined();
    expect(visibleEvent(about('user.deleted', 'alice', { email: 'a@example.com', role: 'user' }), 'alice')).toMatchObject({ event: 'user.deleted' });
    expect(visibleEvent(about('user.created', 'alice', { role: 'user' }), 'alice')).toBeUndefined();
    // A subject of another type with the same id is not the user.
    expect(visibleEvent({ ...role, subject: { type: 'group', id: 'alice' } }, 'alice')).toBeUndefined();
  });
});
