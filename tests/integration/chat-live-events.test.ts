import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * The live event stream (`GET /api/v1/events/stream`, Server-Sent Events) over the real stack: a
 * user's stream carries their own changes made from another session, never another user's; a
 * folder shared with a user reaches that user; a reconnect with `Last-Event-ID` resumes exactly
 * after it. Waits are bounded by a generous ceiling; nothing asserts a duration.
 */
const stack = new Stack();
let edge: Edge;
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const WAIT_MS = 20_000;

let admin: Account, alice: Account, bob: Account;

interface Frame {
  id?: string;
  event?: string;
  data?: any;
}

/** An SSE connection read frame by frame. */
async function openStream(who: { token?: string; cookie?: string }, headers: Record<string, string> = {}, query = '') {
  const abort = new AbortController();
  const h: Record<string, string> = { accept: 'text/event-stream', ...headers };
  if (who.token) h.authorization = `Bearer ${who.token}`;
  if (who.cookie) h.cookie = `token=${who.cookie}`;
  const res = await fetch(`${edge.chatUrl}/api/v1/events/stream${query}`, { headers: h, signal: abort.signal });
  const frames: Frame[] = [];
  const comments: string[] = [];
  let waiters: (() => void)[] = [];
  let ended = false;
  if (res.ok) {
    void (async () => {
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut: number;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            const f: Frame = {};
            let isFrame = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) comments.push(line.slice(1).trim());
              else if (line.startsWith('id: ')) (f.id = line.slice(4)), (isFrame = true);
              else if (line.startsWith('event: ')) f.event = line.slice(7);
              else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
            }
            if (isFrame) frames.push(f);
            for (const w of waiters) w();
            waiters = [];
          }
        }
      } catch {
        // aborted
      } finally {
        ended = true;
        for (const w of waiters) w();
      }
    })();
  }
  const changed = () => new Promise<void>((r) => waiters.push(r));
  /** Wait (bounded) until `pred` holds over what has arrived. */
  async function until(pred: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (!pred()) {
      if (ended) throw new Error(`stream ended before ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${WAIT_MS} ms; got ${JSON.stringify(frames.map((f) => f.event))}`);
      await Promise.race([changed(), new Promise((r) => setTimeout(r, Math.min(left, 500)))]);
    }
  }
  if (res.ok) await until(() => comments.includes('connected'), 'connected comment');
  return {
    res,
    frames,
    until,
    /** The frame for `event` about subject `id`, once it has arrived. */
    async frame(event: string, id: string): Promise<Frame> {
      const find = () => frames.find((f) => f.event === event && f.data?.subject?.id === id);
      await until(() => !!find(), `${event} for ${id}`);
      return find()!;
    },
    close: () => abort.abort(),
  };
}

const newChat = async (who: Account, title: string) => {
  const r = await call('/api/v1/chats/new', who, 'POST', { chat: { title, messages: [] } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string };
};
/** A second session of the same user (another tab or device). */
const signinAgain = async (who: Account): Promise<Account> => {
  const r = await call('/api/v1/auths/signin', null, 'POST', { email: who.email, password: who.password });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { ...who, token: r.body.token };
};

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  alice = await addUser(admin, 'Alice');
  bob = await addUser(admin, 'Bob');
});
afterAll(async () => {
  await stack.close();
});

describe('GET /api/v1/events/stream', () => {
  it('needs a session: no credential → 401, a bad Last-Event-ID → 400', async () => {
    const none = await fetch(`${edge.chatUrl}/api/v1/events/stream`);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ detail: 'Not authenticated' });
    const bad = await fetch(`${edge.chatUrl}/api/v1/events/stream`, { headers: { authorization: `Bearer ${alice.token}`, 'last-event-id': 'x1' } });
    expect(bad.status).toBe(400);
  });

  it("streams the caller's own chat changes from another session, never another user's", async () => {
    const a = await openStream({ cookie: alice.token }); // EventSource sends the cookie
    const b = await openStream({ token: bob.token });
    expect(a.res.status).toBe(200);
    expect(a.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const alice2 = await signinAgain(alice);

    const bobs = await newChat(bob, 'Bob private');
    const chat = await newChat(alice2, 'Plans');
    expect((await call(`/api/v1/chats/${chat.id}`, alice2, 'POST', { chat: { title: 'Plans v2' } })).status).toBe(200);
    expect((await call(`/api/v1/chats/${bobs.id}`, bob, 'POST', { chat: { title: 'Bob renamed' } })).status).toBe(200);
    expect((await call(`/api/v1/chats/${chat.id}`, alice2, 'DELETE')).status).toBe(200);

    const created = await a.frame('chat.created', chat.id);
    expect(created.data).toMatchObject({ event: 'chat.created', actor: { id: alice.id }, data: { title: 'Plans' } });
    expect(Number(created.id)).toBeGreaterThan(0);
    expect((await a.frame('chat.updated', chat.id)).data.data).toMatchObject({ title: 'Plans v2' });
    await a.frame('chat.deleted', chat.id);
    // Bob's own stream has Bob's changes, which shows they were published before Alice's delete…
    await b.frame('chat.updated', bobs.id);
    // …and neither stream ever carries the other user's.
    expect(a.frames.every((f) => f.data.actor?.id === alice.id)).toBe(true);
    expect(b.frames.every((f) => f.data.actor?.id === bob.id)).toBe(true);
    expect(b.frames.some((f) => f.data.subject?.id === chat.id)).toBe(false);
    // Ids are the stream's sequence: strictly increasing.
    const ids = a.frames.map((f) => Number(f.id));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    a.close();
    b.close();
  });

  it('a folder shared with Bob reaches Bob (without the other grantees), not a stranger', async () => {
    const carol = await addUser(admin, 'Carol');
    const b = await openStream({ token: bob.token });
    const c = await openStream({ token: carol.token });
    const f = await call('/api/v1/folders/', alice, 'POST', { name: `Shared ${Date.now()}` });
    expect(f.status, JSON.stringify(f.body)).toBe(200);
    const r = await call(`/api/v1/folders/${f.body.id}/access/update`, alice, 'POST', {
      access_grants: [{ principal_type: 'user', principal_id: bob.id, permission: 'read' }],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const shared = await b.frame('folder.access_updated', f.body.id);
    expect(shared.data).toMatchObject({ actor: { id: alice.id, email: null }, subject: { type: 'folder', id: f.body.id }, data: { grant_count: 1 } });
    expect(shared.data.data.user_ids).toBeUndefined();
    // Carol's stream is open and working (her own change arrives), and never had Alice's share.
    const mine = await newChat(carol, 'Carol own');
    await c.frame('chat.created', mine.id);
    expect(c.frames.some((x) => x.data.actor?.id === alice.id)).toBe(false);
    expect(b.frames.some((x) => x.event === 'folder.created')).toBe(false);
    b.close();
    c.close();
  });

  it('a shared folder renamed, moved and deleted by its owner, and a group membership that grants it, reach the grantee', async () => {
    const dave = await addUser(admin, 'Dave');
    const erin = await addUser(admin, 'Erin');
    const d = await openStream({ token: dave.token });
    const e = await openStream({ token: erin.token });
    const f = (await call('/api/v1/folders/', alice, 'POST', { name: `Team ${Date.now()}` })).body as { id: string };
    const parent = (await call('/api/v1/folders/', alice, 'POST', { name: `Parent ${Date.now()}` })).body as { id: string };
    const g = await call('/api/v1/groups/create', admin, 'POST', { name: `Readers ${Date.now()}`, description: '' });
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    const grant = await call(`/api/v1/folders/${f.id}/access/update`, alice, 'POST', {
      access_grants: [{ principal_type: 'user', principal_id: dave.id, permission: 'read' }, { principal_type: 'group', principal_id: g.body.id, permission: 'read' }],
    });
    expect(grant.status, JSON.stringify(grant.body)).toBe(200);

    // Erin joins the group that holds a grant: she is told (and the share itself did not name her).
    expect((await call(`/api/v1/groups/id/${g.body.id}/users/add`, admin, 'POST', { user_ids: [erin.id] })).status).toBe(200);
    const joined = await e.frame('group.member_added', g.body.id);
    expect(joined.data.data.user_ids).toBeUndefined();
    expect(joined.data.actor).toMatchObject({ id: admin.id, email: null, role: null });

    expect((await call(`/api/v1/folders/${f.id}/update`, alice, 'POST', { name: 'Renamed team' })).status).toBe(200);
    expect((await d.frame('folder.updated', f.id)).data.data).toEqual({ name: 'Renamed team' });
    await e.frame('folder.updated', f.id);
    // Moved under another of Alice's folders: still shared (the grant is on the folder itself).
    expect((await call(`/api/v1/folders/${f.id}/update/parent`, alice, 'POST', { parent_id: parent.id })).status).toBe(200);
    expect((await d.frame('folder.parent_updated', f.id)).data.data).toEqual({ parent_id: parent.id });

    expect((await call(`/api/v1/groups/id/${g.body.id}/users/remove`, admin, 'POST', { user_ids: [erin.id] })).status).toBe(200);
    await e.frame('group.member_removed', g.body.id);
    // Membership replaced wholesale by an update, then the group deleted: its members are told each time.
    expect((await call(`/api/v1/groups/id/${g.body.id}/update`, admin, 'POST', { name: 'Readers renamed', user_ids: [erin.id] })).status).toBe(200);
    expect((await e.frame('group.updated', g.body.id)).data.data).toEqual({ name: 'Readers renamed' });
    expect((await call(`/api/v1/groups/id/${g.body.id}/update`, admin, 'POST', { user_ids: [] })).status).toBe(200);
    await e.until(() => e.frames.filter((x) => x.event === 'group.updated').length === 2, 'the second group.updated');
    expect((await call(`/api/v1/groups/id/${g.body.id}/users/add`, admin, 'POST', { user_ids: [erin.id] })).status).toBe(200);
    await e.until(() => e.frames.filter((x) => x.event === 'group.member_added').length === 2, 'the second group.member_added');
    expect((await call(`/api/v1/groups/id/${g.body.id}/delete`, admin, 'DELETE')).status).toBe(200);
    await e.frame('group.deleted', g.body.id);
    // Dave was never a member: none of the group's events reached him.
    expect(d.frames.some((x) => x.event?.startsWith('group.'))).toBe(false);

    expect((await call(`/api/v1/folders/${parent.id}`, alice, 'DELETE')).status).toBe(200);
    const gone = await d.frame('folder.deleted', parent.id);
    expect(gone.data.data).toMatchObject({ folder_ids: expect.arrayContaining([parent.id, f.id]) });
    // Erin left the group before the delete: she is no longer told about the folder.
    expect(e.frames.some((x) => x.event === 'folder.deleted')).toBe(false);
    d.close();
    e.close();
  });

  it('an admin changing a user’s role or deleting them reaches that user’s stream, nobody else’s', async () => {
    const frank = await addUser(admin, 'Frank');
    const s = await openStream({ token: frank.token });
    const other = await openStream({ token: bob.token });
    const u = (await call(`/api/v1/users/${frank.id}`, admin)).body;
    const r = await call(`/api/v1/users/${frank.id}/update`, admin, 'POST', { role: 'pending', name: u.name, email: u.email, profile_image_url: u.profile_image_url });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const changed = await s.frame('user.role_updated', frank.id);
    expect(changed.data).toMatchObject({ data: { role: 'pending', previous_role: 'user' }, actor: { id: admin.id, email: null, role: null } });
    expect((await call(`/api/v1/users/${frank.id}`, admin, 'DELETE')).status).toBe(200);
    await s.frame('user.deleted', frank.id);
    // …and the stream ends there: nothing more is the deleted account's to see.
    await expect(s.until(() => false, 'the end of the stream')).rejects.toThrow(/stream ended/);
    // Bob's stream is working (his own change arrives) and carried none of Frank's.
    const mine = await newChat(bob, 'Bob again');
    await other.frame('chat.created', mine.id);
    expect(other.frames.some((x) => x.data.subject?.id === frank.id)).toBe(false);
    s.close();
    other.close();
  });

  it('a reconnect with Last-Event-ID gets exactly the events after it', async () => {
    const a = await openStream({ token: alice.token });
    const titles = ['R1', 'R2', 'R3'];
    const chats: { id: string }[] = [];
    for (const t of titles) chats.push(await newChat(alice, t));
    for (const c of chats) await a.frame('chat.created', c.id);
    a.close();
    const seen = a.frames.filter((f) => f.event === 'chat.created' && chats.some((c) => c.id === f.data.subject.id));
    const first = seen[0]!;
    // Written while no stream was open.
    const later = await newChat(alice, 'R4');

    const resumed = await openStream({ token: alice.token }, { 'last-event-id': first.id! });
    await resumed.frame('chat.created', later.id);
    const got = resumed.frames.filter((f) => Number(f.id) <= Number((resumed.frames.find((x) => x.data.subject?.id === later.id) ?? {}).id));
    expect(got.map((f) => f.data.subject.id)).toEqual([chats[1]!.id, chats[2]!.id, later.id]);
    expect(Number(got[0]!.id)).toBeGreaterThan(Number(first.id));
    resumed.close();

    // The query form does the same for a manual reconnect.
    const manual = await openStream({ token: alice.token }, {}, `?last_event_id=${seen[2]!.id}`);
    await manual.frame('chat.created', later.id);
    expect(manual.frames[0]!.data.subject.id).toBe(later.id);
    manual.close();
  });

  it('one ephemeral consumer per open stream, deleted when the client goes away', async () => {
    const bus = await stack.busHandle();
    const jsm = await bus.nc.jetstreamManager();
    const consumers = async () => (await jsm.streams.info(bus.bucket('EVENTS'))).state.consumer_count;
    const waitFor = async (want: number) => {
      for (const deadline = Date.now() + WAIT_MS; (await consumers()) !== want; ) {
        if (Date.now() > deadline) throw new Error(`consumer count never became ${want}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await waitFor(0); // earlier tests' streams are closed
    const one = await openStream({ token: alice.token });
    const two = await openStream({ token: bob.token });
    expect(await consumers()).toBe(2);
    one.close();
    await waitFor(1);
    two.close();
    await waitFor(0);
  });
});
