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
});
