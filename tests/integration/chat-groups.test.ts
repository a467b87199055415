import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsNamed, NOT_FOUND, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Groups on the chat face (Open WebUI 0.10.2 /api/v1/groups) over real HTTP: admins create,
 * update and delete groups and manage members; users list the groups they belong to; every
 * change is an event in the outbox; unknown ids are 404 JSON, bad bodies 422.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);

let admin: Account;
const users: Account[] = [];

const GROUP_KEYS = ['created_at', 'data', 'description', 'id', 'member_count', 'meta', 'name', 'permissions', 'updated_at', 'user_id'];

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  for (let i = 0; i < 3; i++) users.push(await addUser(admin, `User ${i}`));
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('groups', () => {
  let team: any;
  let open: any;

  it('only admins create groups; the answer is GroupResponse with member_count', async () => {
    const denied = await call('/api/v1/groups/create', users[0]!, 'POST', { name: 'X', description: '' });
    expect(denied).toEqual({ status: 401, body: { detail: PROHIBITED } });

    const r = await call('/api/v1/groups/create', admin, 'POST', { name: 'Team', description: 'the team', permissions: { chat: { delete: false } } });
    expect(r.status).toBe(200);
    team = r.body;
    expect(Object.keys(team).sort()).toEqual(GROUP_KEYS);
    expect(team).toMatchObject({
      name: 'Team',
      description: 'the team',
      user_id: admin.id,
      member_count: 0,
      permissions: { chat: { delete: false } },
      meta: null,
      // Open WebUI's default "who can share to this group": its members.
      data: { config: { share: 'members' } },
    });
    expect(team.created_at).toBeGreaterThan(1_700_000_000);
    expect(team.created_at).toBeLessThan(10_000_000_000);

    open = (await call('/api/v1/groups/create', admin, 'POST', { name: 'Open', description: '', data: { config: { share: true } } })).body;
    expect(open.data).toEqual({ config: { share: true } });
    const ev = await eventsNamed(db, 'group.created');
    expect(ev.map((e) => e.subject.id)).toEqual([team.id, open.id]);
    expect(ev[0]).toMatchObject({ resource: 'group', operation: 'created', actor: { id: admin.id, type: 'user' }, data: { name: 'Team' } });
  });

  it('refuses bad bodies with FastAPI 422 lists', async () => {
    const missing = await call('/api/v1/groups/create', admin, 'POST', { description: 'no name' });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'name'], msg: 'Field required' });
    const wrong = await call('/api/v1/groups/create', admin, 'POST', { name: 'n', description: 5 });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail[0].loc).toEqual(['body', 'description']);
    const ids = await call(`/api/v1/groups/id/${team.id}/users/add`, admin, 'POST', { user_ids: 'not-a-list' });
    expect(ids.status).toBe(422);
    expect((await call('/api/v1/groups/', admin)).body).toHaveLength(2);
  });

  it('adds members, ignoring unknown and repeated user ids', async () => {
    const r = await call(`/api/v1/groups/id/${team.id}/users/add`, admin, 'POST', {
      user_ids: [users[0]!.id, users[1]!.id, 'no-such-user', users[0]!.id],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: team.id, member_count: 2 });
    // Adding someone already in is not an error either.
    expect((await call(`/api/v1/groups/id/${team.id}/users/add`, admin, 'POST', { user_ids: [users[1]!.id] })).body.member_count).toBe(2);

    const members = await call(`/api/v1/groups/id/${team.id}/users`, admin, 'POST');
    expect(members.status).toBe(200);
    expect(members.body.map((u: any) => u.id).sort()).toEqual([users[0]!.id, users[1]!.id].sort());
    expect(members.body[0]).toEqual({
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
      id: members.body[0].id,
      name: expect.stringMatching(/^User [01]$/),
      email: expect.stringContaining('@example.com'),
      role: 'user',
    });
    const ev = await eventsNamed(db, 'group.member_added');
    expect(ev[0]).toMatchObject({ subject: { type: 'group', id: team.id }, data: { user_ids: [users[0]!.id, users[1]!.id] } });
    expect((await call(`/api/v1/groups/id/${team.id}/users`, users[0]!, 'POST')).status).toBe(401);
  });

  it('admins list every group; users only theirs, or with ?share= the ones they may share to', async () => {
    const all = await call('/api/v1/groups/', admin);
    expect(all.body.map((g: any) => g.name).sort()).toEqual(['Open', 'Team']);
    expect(all.body.find((g: any) => g.id === team.id).member_count).toBe(2);

    const mine = await call('/api/v1/groups', users[0]!);
    expect(mine.status).toBe(200);
    expect(mine.body.map((g: any) => g.id)).toEqual([team.id]);
    expect(Object.keys(mine.body[0]).sort()).toEqual(GROUP_KEYS);
    expect((await call('/api/v1/groups/', users[2]!)).body).toEqual([]);

    // "members" groups are shareable by members only, share:true groups by anyone.
    expect((await call('/api/v1/groups/?share=true', users[2]!)).body.map((g: any) => g.id)).toEqual([open.id]);
    expect((await call('/api/v1/groups/?share=true', users[0]!)).body.map((g: any) => g.id).sort()).toEqual([open.id, team.id].sort());
    const bad = await call('/api/v1/groups/?share=maybe', users[0]!);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'share'] });
  });

  it('gets and updates a group, replacing members when user_ids is given', async () => {
    const got = await call(`/api/v1/groups/id/${team.id}`, admin);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: team.id, name: 'Team', member_count: 2 });
    expect((await call(`/api/v1/groups/id/${team.id}`, users[0]!)).status).toBe(401);

    const renamed = await call(`/api/v1/groups/id/${team.id}/update`, admin, 'POST', { name: 'Core team' });
    expect(renamed.status).toBe(200);
    // Fields left out keep their values.
    expect(renamed.body).toMatchObject({ name: 'Core team', description: 'the team', member_count: 2, permissions: { chat: { delete: false } } });
    expect(renamed.body.updated_at).toBeGreaterThanOrEqual(team.updated_at);

    const replaced = await call(`/api/v1/groups/id/${team.id}/update`, admin, 'POST', { description: 'new', user_ids: [users[2]!.id, 'ghost'] });
    expect(replaced.body).toMatchObject({ name: 'Core team', description: 'new', member_count: 1 });
    expect((await call('/api/v1/groups/', users[0]!)).body).toEqual([]);
    expect((await call('/api/v1/groups/', users[2]!)).body.map((g: any) => g.id)).toEqual([team.id]);
    const ev = await eventsNamed(db, 'group.updated');
    expect(ev.map((e) => e.data.name)).toEqual(['Core team', 'Core team']);
  });

  it('removes members', async () => {
    const r = await call(`/api/v1/groups/id/${team.id}/users/remove`, admin, 'POST', { user_ids: [users[2]!.id, 'ghost'] });
    expect(r.status).toBe(200);
    expect(r.body.member_count).toBe(0);
    expect((await call(`/api/v1/groups/id/${team.id}/users`, admin, 'POST')).body).toEqual([]);
    const ev = await eventsNamed(db, 'group.member_removed');
    expect(ev[0]).toMatchObject({ subject: { id: team.id }, data: { user_ids: [users[2]!.id, 'ghost'] } });
  });

  it('answers 404 JSON for unknown group ids on every route', async () => {
    const nf = { status: 404, body: { detail: NOT_FOUND } };
    expect(await call('/api/v1/groups/id/nope', admin)).toEqual(nf);
    expect(await call('/api/v1/groups/id/nope/update', admin, 'POST', { name: 'x' })).toEqual(nf);
    expect(await call('/api/v1/groups/id/nope/users', admin, 'POST')).toEqual(nf);
    expect(await call('/api/v1/groups/id/nope/users/add', admin, 'POST', { user_ids: [users[0]!.id] })).toEqual(nf);
    expect(await call('/api/v1/groups/id/nope/users/remove', admin, 'POST', { user_ids: [] })).toEqual(nf);
    expect(await call('/api/v1/groups/id/nope/delete', admin, 'DELETE')).toEqual(nf);
    const [n] = await db<{ n: number }[]>`select count(*)::int as n from group_member where group_id = 'nope'`;
    expect(n!.n).toBe(0);
  });

  it('deletes a group with its memberships and the grants made to it', async () => {
    await call(`/api/v1/groups/id/${open.id}/users/add`, admin, 'POST', { user_ids: [users[0]!.id] });
    const folder = await call('/api/v1/folders/', users[1]!, 'POST', { name: 'Shared with Open' });
    expect(folder.status).toBe(200);
    const shared = await call(`/api/v1/folders/${folder.body.id}/access/update`, users[1]!, 'POST', {
      access_grants: [{ principal_type: 'group', principal_id: open.id, permission: 'read' }],
    });
    expect(shared.status).toBe(200);
    expect((await call(`/api/v1/folders/${folder.body.id}`, users[0]!)).status).toBe(200);

    expect((await call(`/api/v1/groups/id/${open.id}/delete`, users[0]!, 'DELETE')).status).toBe(401);
    const r = await call(`/api/v1/groups/id/${open.id}/delete`, admin, 'DELETE');
    expect(r).toEqual({ status: 200, body: true });
    expect((await call(`/api/v1/groups/id/${open.id}`, admin)).status).toBe(404);
    expect((await call('/api/v1/groups/', users[0]!)).body).toEqual([]);
    // Membership went with the group, so the folder is out of reach again.
    expect((await call(`/api/v1/folders/${folder.body.id}`, users[0]!)).status).toBe(404);
    expect((await call(`/api/v1/folders/${folder.body.id}`, users[1]!)).body.access_grants).toEqual([]);
    const [left] = await db<{ n: number }[]>`select count(*)::int as n from group_member where group_id = ${open.id}`;
    expect(left!.n).toBe(0);
    const ev = await eventsNamed(db, 'group.deleted');
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({ subject: { type: 'group', id: open.id }, actor: { id: admin.id } });
  });
});
