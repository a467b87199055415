import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { strFromU8, unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsAbout, eventsNamed, NOT_FOUND, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Knowledge bases on the chat face (Open WebUI 0.10.2 /api/v1/knowledge) over real HTTP: bases and
 * their grants (owner, reader, writer, a group member, everyone, a stranger, the admin), files
 * linked in and out, the directory tree, and the folder sync a 0.10.2 client drives
 * (sync/diff → dirs/create parent-first → upload → file/add → sync/cleanup), which must keep every
 * relative path and upload nothing when nothing changed — uploads go through the files API and the
 * ingest worker. Elsewhere, files are rows written straight into the test's schema (processed or
 * not, with their SHA-256), so each case sets exactly the state it needs.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const KB = '/api/v1/knowledge';
const FILE_NOT_PROCESSED = 'Extracted content is not available for this file. Please ensure that the file is processed before proceeding.';

let admin: Account, owner: Account, reader: Account, writer: Account, member: Account, stranger: Account;
let group: { id: string };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A file row as an upload would leave it: bytes hashed, text extracted, status set. */
async function fileRow(who: Account, filename: string, content: string, status: 'completed' | 'pending' | 'failed' = 'completed'): Promise<string> {
  const id = randomUUID();
  const t = Math.floor(Date.now() / 1000);
  await db`insert into file (id, user_id, hash, filename, path, data, meta, created_at, updated_at)
    values (${id}, ${who.id}, ${sha256(content)}, ${filename}, null, ${db.json({ status, content })}, ${db.json({ name: filename, content_type: 'text/plain', size: content.length })}, ${t}, ${t})`;
  return id;
}

async function newBase(who: Account, name: string, extra: Record<string, unknown> = {}) {
  const r = await call(`${KB}/create`, who, 'POST', { name, description: `about ${name}`, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}
const share = (who: Account, id: string, access_grants: unknown[]) => call(`${KB}/${id}/access/update`, who, 'POST', { access_grants });
const addFile = (who: Account, id: string, file_id: string, directory_id?: string | null) =>
  call(`${KB}/${id}/file/add`, who, 'POST', { file_id, ...(directory_id === undefined ? {} : { directory_id }) });
const mkdir = async (who: Account, id: string, name: string, parent_id?: string | null) => {
  const r = await call(`${KB}/${id}/dirs/create`, who, 'POST', { name, ...(parent_id === undefined ? {} : { parent_id }) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

/** Every linked file as "dir/path/filename", from the tables (what the API's tree must agree with). */
async function relativePaths(knowledgeId: string): Promise<string[]> {
  const rows = await db<{ p: string }[]>`
    with recursive dirs (id, path) as (
      select id, name from knowledge_directory where knowledge_id = ${knowledgeId} and parent_id is null
      union all
      select d.id, dirs.path || '/' || d.name from knowledge_directory d join dirs on d.parent_id = dirs.id
    )
    select coalesce(dirs.path || '/', '') || f.filename as p
    from knowledge_file kf join file f on f.id = kf.file_id left join dirs on dirs.id = kf.directory_id
    where kf.knowledge_id = ${knowledgeId}`;
  return rows.map((r) => r.p).sort();
}

interface LocalFile {
  path: string;
  filename: string;
  content: string;
}

/**
 * The 0.10.2 client's folder sync (KnowledgeBase.svelte): manifest → sync/diff → sync/cleanup of
 * deleted and replaced files and orphaned directories → create missing directories parent-first →
 * upload each added or modified file into its directory. Returns the diff and how many files were
 * uploaded.
 */
async function syncFolder(who: Account, knowledgeId: string, files: LocalFile[]) {
  const manifest = files.map((f) => ({ filename: f.filename, path: f.path, checksum: sha256(f.content), size: f.content.length }));
  const diff = await call(`${KB}/${knowledgeId}/sync/diff`, who, 'POST', { manifest });
  expect(diff.status, JSON.stringify(diff.body)).toBe(200);
  // Stale files and orphaned directories go first, as the 0.10.2 client does.
  const stale = [...diff.body.deleted.map((d: { file_id: string }) => d.file_id), ...diff.body.modified.map((m: { stale_file_id: string }) => m.stale_file_id)];
  if (stale.length || diff.body.rmdir.length) {
    const r = await call(`${KB}/${knowledgeId}/sync/cleanup`, who, 'POST', { file_ids: stale, dir_ids: diff.body.rmdir });
    expect(r).toEqual({ status: 200, body: { status: true } });
  }
  const dirMap: Record<string, string> = { ...diff.body.directory_map };
  for (const path of diff.body.mkdir as string[]) {
    const cut = path.lastIndexOf('/');
    const parent = cut < 0 ? null : dirMap[path.slice(0, cut)];
    expect(cut < 0 || parent, `parent of ${path} made first`).toBeTruthy();
    dirMap[path] = (await mkdir(who, knowledgeId, path.slice(cut + 1), parent)).id;
  }
  const upload = [...diff.body.added, ...diff.body.modified] as { filename: string; path: string }[];
  const uploadedIds: string[] = [];
  for (const u of upload) {
    const local = files.find((f) => f.path === u.path && f.filename === u.filename)!;
    // The files API, as the client uploads: the base and directory in `metadata`; the file joins
    // the base once the ingest worker has processed it.
    const form = new FormData();
    form.append('file', new Blob([local.content], { type: 'text/plain' }), local.filename);
    form.append('metadata', JSON.stringify({ knowledge_id: knowledgeId, directory_id: u.path ? dirMap[u.path] : null, file_hash: sha256(local.content) }));
    const r = await fetch(`${edge.chatUrl}/api/v1/files/`, { method: 'POST', headers: { authorization: `Bearer ${who.token}` }, body: form });
    const body = await r.json();
    expect(r.status, JSON.stringify(body)).toBe(200);
    uploadedIds.push(body.id);
  }
  const linkedCount = async () => (await db<{ n: number }[]>`select count(*)::int as n from knowledge_file where knowledge_id = ${knowledgeId} and file_id = any(${uploadedIds}::text[])`)[0]!.n;
  await waitFor(async () => (await linkedCount()) === uploadedIds.length, 60_000, () => `uploads not all linked after processing:\n${stack.ingest?.log().slice(-3000)}`);
  return { diff: diff.body, uploaded: upload.length };
}

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  owner = await addUser(admin, 'Owner');
  reader = await addUser(admin, 'Reader');
  writer = await addUser(admin, 'Writer');
  member = await addUser(admin, 'Member');
  stranger = await addUser(admin, 'Stranger');
  group = (await call('/api/v1/groups/create', admin, 'POST', { name: 'Library', description: '' })).body;
  expect((await call(`/api/v1/groups/id/${group.id}/users/add`, admin, 'POST', { user_ids: [member.id] })).body.member_count).toBe(1);
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('knowledge bases', () => {
  it('creates, lists, reads, updates and deletes a base in Open WebUI shapes, each change an event', async () => {
    const kb = await newBase(owner, 'Handbook');
    expect(Object.keys(kb).sort()).toEqual(['access_grants', 'created_at', 'description', 'files', 'id', 'meta', 'name', 'updated_at', 'user_id']);
    expect(kb).toMatchObject({ name: 'Handbook', description: 'about Handbook', user_id: owner.id, meta: null, access_grants: [], files: null });

    const list = await call(`${KB}/`, owner);
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    expect(list.body.items[0]).toMatchObject({ id: kb.id, write_access: true, file_count: 0, user: { id: owner.id, name: 'Owner', email: owner.email, role: 'user' } });
    expect((await call(KB, owner)).body.total).toBe(1);

    const got = await call(`${KB}/${kb.id}`, owner);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: kb.id, files: [], write_access: true });

    const upd = await call(`${KB}/${kb.id}/update`, owner, 'POST', { name: 'Staff handbook', description: 'rules' });
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({ name: 'Staff handbook', description: 'rules', files: [], write_access: true });
    expect((await call(`${KB}/search?query=staff`, owner)).body.items.map((k: any) => k.id)).toEqual([kb.id]);
    expect((await call(`${KB}/search?query=nothing-like-it`, owner)).body).toEqual({ items: [], total: 0 });

    expect(await call(`${KB}/${kb.id}/delete`, owner, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`${KB}/${kb.id}`, owner)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect((await eventsAbout(db, kb.id)).map((e) => e.event)).toEqual(['knowledge.created', 'knowledge.updated', 'knowledge.deleted']);
    expect((await eventsAbout(db, kb.id))[1]).toMatchObject({ data: { name: 'Staff handbook', description: 'rules' }, actor: { id: owner.id } });
  });

  it('answers a bad form with FastAPI’s 422 list and a bad page with its query 422', async () => {
    const r = await call(`${KB}/create`, owner, 'POST', { name: 'No description' });
    expect(r.status).toBe(422);
    expect(r.body.detail).toEqual([{ type: 'missing', loc: ['body', 'description'], msg: 'Field required', input: { name: 'No description' } }]);
    const bad = await call(`${KB}/create`, owner, 'POST', { name: 'x', description: '', access_grants: [{ principal_type: 'robot', principal_id: 'r', permission: 'read' }] });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'access_grants', 0, 'principal_type']);
    expect((await call(`${KB}/?page=two`, owner)).status).toBe(422);
    const unknown = await call(`${KB}/create`, owner, 'POST', { name: 'x', description: '', access_grants: [{ principal_type: 'user', principal_id: 'nobody', permission: 'read' }] });
    expect(unknown).toEqual({ status: 400, body: { detail: 'Unknown user in access_grants: nobody' } });
    // Nothing half-written: the refused create left no base behind.
    expect((await call(`${KB}/search?query=x`, owner)).body.items.filter((k: any) => k.name === 'x')).toEqual([]);
  });
});

describe('access grants', () => {
  let kb: any;
  let ownerFile: string;

  beforeAll(async () => {
    kb = await newBase(owner, 'Shared notes');
    ownerFile = await fileRow(owner, 'intro.md', '# Intro');
    expect((await addFile(owner, kb.id, ownerFile)).status).toBe(200);
  });

  it('a stranger learns nothing: 404 on every route, and the list leaves it out', async () => {
    const nf = { status: 404, body: { detail: NOT_FOUND } };
    expect(await call(`${KB}/${kb.id}`, stranger)).toEqual(nf);
    expect(await call(`${KB}/${kb.id}/files`, stranger)).toEqual(nf);
    expect(await addFile(stranger, kb.id, await fileRow(stranger, 'x.md', 'x'))).toEqual(nf);
    expect(await call(`${KB}/${kb.id}/dirs/create`, stranger, 'POST', { name: 'x' })).toEqual(nf);
    expect(await call(`${KB}/${kb.id}/sync/diff`, stranger, 'POST', { manifest: [] })).toEqual(nf);
    expect(await call(`${KB}/${kb.id}/delete`, stranger, 'DELETE')).toEqual(nf);
    expect((await call(`${KB}/`, stranger)).body).toEqual({ items: [], total: 0 });
    expect(await call(`${KB}/no-such-id`, owner)).toEqual(nf);
    // A NUL in an id (Postgres refuses it in text) is still just an id that does not exist.
    expect(await call(`${KB}/a%00b`, owner)).toEqual(nf);
    expect(await call(`${KB}/${kb.id}/dirs/a%00b/delete`, owner, 'DELETE')).toEqual(nf);
    expect(await addFile(owner, kb.id, 'a\u0000b')).toEqual({ status: 400, body: { detail: NOT_FOUND } });
    expect(await call(`${KB}/${kb.id}/sync/cleanup`, owner, 'POST', { file_ids: ['a\u0000b'], dir_ids: ['x\u0000'] })).toEqual({ status: 200, body: { status: true } });
    expect((await call(`${KB}/${kb.id}/files?query=a%00b&directory_id=%00`, owner)).status).toBe(200);
    expect((await call(`${KB}/search?query=%00`, owner)).status).toBe(200);
  });

  it('read and write grants to users and a group: readers read, writers add, and the grantees are named in the event', async () => {
    const r = await share(owner, kb.id, [
      { principal_type: 'user', principal_id: reader.id, permission: 'read' },
      { principal_type: 'user', principal_id: writer.id, permission: 'read' },
      { principal_type: 'user', principal_id: writer.id, permission: 'write' },
      { principal_type: 'group', principal_id: group.id, permission: 'read' },
    ]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.access_grants.map((g: any) => `${g.principal_type}:${g.principal_id}:${g.permission}`).sort()).toEqual(
      [`group:${group.id}:read`, `user:${reader.id}:read`, `user:${writer.id}:read`, `user:${writer.id}:write`].sort(),
    );
    expect(r.body.access_grants[0]).toMatchObject({ resource_type: 'knowledge', resource_id: kb.id });
    const [ev] = (await eventsAbout(db, kb.id)).filter((e) => e.event === 'knowledge.access_updated');
    expect(ev.data).toEqual({ grant_count: 4, user_ids: [member.id, reader.id, writer.id].sort() });

    // Reader: lists and reads, with write_access false, and may not change anything.
    const rl = await call(`${KB}/`, reader);
    expect(rl.body.items.map((k: any) => [k.id, k.write_access])).toEqual([[kb.id, false]]);
    expect((await call(`${KB}/${kb.id}`, reader)).body).toMatchObject({ write_access: false, files: [{ id: ownerFile }] });
    expect((await call(`${KB}/${kb.id}/files`, reader)).body.items.map((f: any) => f.id)).toEqual([ownerFile]);
    const readerFile = await fileRow(reader, 'mine.md', 'mine');
    expect(await addFile(reader, kb.id, readerFile)).toEqual({ status: 400, body: { detail: PROHIBITED } });
    expect(await call(`${KB}/${kb.id}/dirs/create`, reader, 'POST', { name: 'x' })).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await call(`${KB}/${kb.id}/update`, reader, 'POST', { name: 'mine now', description: '' })).toEqual({ status: 400, body: { detail: PROHIBITED } });
    expect(await call(`${KB}/${kb.id}/delete`, reader, 'DELETE')).toEqual({ status: 400, body: { detail: PROHIBITED } });

    // Group member: reads through the group.
    expect((await call(`${KB}/${kb.id}`, member)).body).toMatchObject({ id: kb.id, write_access: false });

    // Writer: adds their own file, sees write_access.
    const writerFile = await fileRow(writer, 'writer.md', 'from the writer');
    const added = await addFile(writer, kb.id, writerFile);
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.files.map((f: any) => f.id).sort()).toEqual([ownerFile, writerFile].sort());
    expect(added.body.write_access).toBe(true);
    // …but not somebody else's file they cannot read.
    expect(await addFile(writer, kb.id, await fileRow(stranger, 'secret.md', 'secret'))).toEqual({ status: 403, body: { detail: PROHIBITED } });
    const listed = (await call(`${KB}/${kb.id}/files`, owner)).body.items.find((f: any) => f.id === writerFile);
    expect(listed.user).toMatchObject({ id: writer.id, name: 'Writer' });
  });

  it('grants given at creation apply at once, and a reader finds the files through /search/files', async () => {
    const kb2 = await newBase(owner, 'Born shared', { access_grants: [{ principal_type: 'user', principal_id: reader.id, permission: 'read' }] });
    expect(kb2.access_grants.map((g: any) => [g.principal_id, g.permission])).toEqual([[reader.id, 'read']]);
    expect((await call(`${KB}/${kb2.id}`, reader)).body).toMatchObject({ id: kb2.id, write_access: false });
    const found = await call(`${KB}/search/files?query=intro`, reader);
    expect(found.status).toBe(200);
    expect(found.body.items.map((f: any) => [f.id, f.collection.id])).toEqual([[ownerFile, kb.id]]);
    expect((await call(`${KB}/search/files?query=intro`, stranger)).body).toEqual({ items: [], directories: [], breadcrumbs: [], total: 0 });
    const [ev] = (await eventsAbout(db, kb2.id)).filter((e) => e.event === 'knowledge.access_updated');
    expect(ev.data).toEqual({ grant_count: 1, user_ids: [reader.id] });
  });

  it('a `*` grant opens the base to every signed-in user, and taking it away closes it again', async () => {
    expect((await share(owner, kb.id, [{ principal_type: 'user', principal_id: '*', permission: 'read' }])).status).toBe(200);
    expect((await call(`${KB}/${kb.id}`, stranger)).body).toMatchObject({ id: kb.id, write_access: false });
    expect((await call(`${KB}/`, stranger)).body.total).toBe(1);
    expect((await share(owner, kb.id, [])).body.access_grants).toEqual([]);
    expect((await call(`${KB}/${kb.id}`, stranger)).status).toBe(404);
    expect((await call(`${KB}/${kb.id}`, reader)).status).toBe(404);
    // The admin reads and changes anyone's base.
    expect((await call(`${KB}/${kb.id}`, admin)).body.write_access).toBe(true);
  });
});

describe('files in a base', () => {
  let kb: any;
  beforeAll(async () => {
    kb = await newBase(owner, 'Files');
  });

  it('refuses a file that is missing or not processed, as Open WebUI', async () => {
    expect(await addFile(owner, kb.id, 'no-such-file')).toEqual({ status: 400, body: { detail: NOT_FOUND } });
    const failed = await fileRow(owner, 'broken.pdf', '', 'failed');
    expect(await addFile(owner, kb.id, failed)).toEqual({ status: 400, body: { detail: FILE_NOT_PROCESSED } });
    expect(await relativePaths(kb.id)).toEqual([]);
  });

  it('adds, lists by directory, moves and removes files; delete_file decides whether the file itself goes', async () => {
    const dir = await mkdir(owner, kb.id, 'guides');
    const a = await fileRow(owner, 'a.md', 'alpha');
    const b = await fileRow(owner, 'b.md', 'beta');
    expect((await addFile(owner, kb.id, a)).status).toBe(200);
    expect((await addFile(owner, kb.id, b, dir.id)).status).toBe(200);
    // Adding again changes nothing (no second link, no second event).
    expect((await addFile(owner, kb.id, a)).body.files).toHaveLength(2);
    expect((await eventsNamed(db, 'knowledge.file.added')).filter((e) => e.data.knowledge_id === kb.id)).toHaveLength(2);

    const all = await call(`${KB}/${kb.id}/files`, owner);
    expect(all.body.total).toBe(2);
    expect(Object.keys(all.body).sort()).toEqual(['breadcrumbs', 'directories', 'items', 'total']);
    expect(all.body.directories.map((d: any) => d.name)).toEqual(['guides']);
    expect(Object.keys(all.body.items[0]).sort()).toEqual(['created_at', 'data', 'filename', 'hash', 'id', 'meta', 'updated_at', 'user', 'user_id']);
    const root = await call(`${KB}/${kb.id}/files?directory_id=`, owner);
    expect(root.body.items.map((f: any) => f.filename)).toEqual(['a.md']);
    const inDir = await call(`${KB}/${kb.id}/files?directory_id=${dir.id}`, owner);
    expect(inDir.body.items.map((f: any) => f.filename)).toEqual(['b.md']);
    expect(inDir.body.breadcrumbs.map((d: any) => d.id)).toEqual([dir.id]);
    expect((await call(`${KB}/${kb.id}/files?query=A.MD`, owner)).body.items.map((f: any) => f.id)).toEqual([a]);

    expect(await call(`${KB}/${kb.id}/file/move`, owner, 'POST', { file_id: a, directory_id: dir.id })).toEqual({ status: 200, body: { status: true } });
    expect(await relativePaths(kb.id)).toEqual(['guides/a.md', 'guides/b.md']);
    expect(await call(`${KB}/${kb.id}/file/move`, owner, 'POST', { file_id: a, directory_id: 'nowhere' })).toEqual({ status: 404, body: { detail: 'Target directory not found.' } });
    const [moved] = (await eventsNamed(db, 'knowledge.file.moved')).filter((e) => e.data.file_id === a);
    expect(moved.data).toEqual({ knowledge_id: kb.id, file_id: a, directory_id: dir.id, filename: 'a.md' });

    const kept = await call(`${KB}/${kb.id}/file/remove?delete_file=false`, owner, 'POST', { file_id: a });
    expect(kept.body.files.map((f: any) => f.id)).toEqual([b]);
    expect(await db`select id from file where id = ${a}`).toHaveLength(1);
    const gone = await call(`${KB}/${kb.id}/file/remove`, owner, 'POST', { file_id: b });
    expect(gone.body.files).toEqual([]);
    expect(await db`select id from file where id = ${b}`).toHaveLength(0);
    expect(await call(`${KB}/${kb.id}/file/remove`, owner, 'POST', { file_id: a })).toEqual({ status: 400, body: { detail: NOT_FOUND } });
  });

  it('lists uploads naming the base that are still being processed (files/pending)', async () => {
    const pending = await fileRow(owner, 'slow.pdf', 'not yet', 'pending');
    const done = await fileRow(owner, 'done.pdf', 'done');
    const elsewhere = await fileRow(owner, 'other.pdf', 'other', 'pending');
    await db`update file set meta = meta || ${db.json({ data: { knowledge_id: kb.id } })} where id = any(${[pending, done]}::text[])`;
    const r = await call(`${KB}/${kb.id}/files/pending`, owner);
    expect(r.status).toBe(200);
    expect(r.body.map((f: any) => f.id)).toEqual([pending]);
    expect(Object.keys(r.body[0]).sort()).toEqual(['created_at', 'data', 'filename', 'hash', 'id', 'meta', 'updated_at', 'user_id']);
    expect((await call(`${KB}/${kb.id}/files/pending`, stranger)).status).toBe(404);
    await db`delete from file where id = any(${[pending, done, elsewhere]}::text[])`;
  });

  it('batch add links what it can and reports the rest as warnings', async () => {
    const ok1 = await fileRow(owner, 'one.txt', 'one');
    const ok2 = await fileRow(owner, 'two.txt', 'two');
    const bad = await fileRow(owner, 'bad.txt', '', 'failed');
    const r = await call(`${KB}/${kb.id}/files/batch/add`, owner, 'POST', [{ file_id: ok1 }, { file_id: ok2 }, { file_id: bad }]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files.map((f: any) => f.id).sort()).toEqual([ok1, ok2].sort());
    expect(r.body.warnings).toEqual({ message: 'Some files failed to process', errors: [`${bad}: ${FILE_NOT_PROCESSED}`] });
    expect(await call(`${KB}/${kb.id}/files/batch/add`, owner, 'POST', [{ file_id: 'missing' }])).toEqual({ status: 400, body: { detail: 'File missing not found' } });
    const reset = await call(`${KB}/${kb.id}/reset`, owner, 'POST');
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ id: kb.id, files: null });
    expect((await call(`${KB}/${kb.id}`, owner)).body.files).toEqual([]);
    const [ev] = (await eventsAbout(db, kb.id)).filter((e) => e.event === 'knowledge.reset');
    expect(ev.data).toEqual({ file_count: 2 });
  });
});

describe('directories', () => {
  it('builds a tree, renames and moves without cycles, and deletes keeping or dropping the files', async () => {
    const kb = await newBase(owner, 'Tree');
    const a = await mkdir(owner, kb.id, 'a');
    expect(Object.keys(a).sort()).toEqual(['created_at', 'id', 'knowledge_id', 'name', 'parent_id', 'updated_at', 'user_id']);
    expect(a).toMatchObject({ knowledge_id: kb.id, parent_id: null, user_id: owner.id });
    const b = await mkdir(owner, kb.id, 'b', a.id);
    const c = await mkdir(owner, kb.id, 'c', b.id);
    const f1 = await fileRow(owner, 'deep.md', 'deep');
    const f2 = await fileRow(owner, 'mid.md', 'mid');
    await addFile(owner, kb.id, f1, c.id);
    await addFile(owner, kb.id, f2, b.id);
    expect(await relativePaths(kb.id)).toEqual(['a/b/c/deep.md', 'a/b/mid.md']);

    expect(await call(`${KB}/${kb.id}/dirs/create`, owner, 'POST', { name: 'b', parent_id: a.id })).toEqual({
      status: 400,
      body: { detail: 'Failed to create directory. A directory with this name may already exist at this level.' },
    });
    expect((await call(`${KB}/${kb.id}/dirs/create`, owner, 'POST', { name: 'x/y' })).status).toBe(400);

    const renamed = await call(`${KB}/${kb.id}/dirs/${b.id}/update`, owner, 'POST', { name: 'bee' });
    expect(renamed.body).toMatchObject({ id: b.id, name: 'bee', parent_id: a.id });
    const cycle = await call(`${KB}/${kb.id}/dirs/${a.id}/update`, owner, 'POST', { parent_id: c.id });
    expect(cycle).toEqual({ status: 400, body: { detail: 'Failed to update directory. This may be caused by a naming conflict or circular move.' } });
    const toRoot = await call(`${KB}/${kb.id}/dirs/${c.id}/update`, owner, 'POST', { parent_id: null });
    expect(toRoot.body).toMatchObject({ id: c.id, parent_id: null, name: 'c' });
    expect(await relativePaths(kb.id)).toEqual(['a/bee/mid.md', 'c/deep.md']);
    // A name-only update leaves the parent where it is.
    expect((await call(`${KB}/${kb.id}/dirs/${c.id}/update`, owner, 'POST', { name: 'see' })).body.parent_id).toBeNull();
    await call(`${KB}/${kb.id}/dirs/${c.id}/update`, owner, 'POST', { parent_id: b.id });
    expect(await relativePaths(kb.id)).toEqual(['a/bee/mid.md', 'a/bee/see/deep.md']);

    // Delete "bee" keeping files: they move up to "a"; its sub-directory goes with it.
    expect(await call(`${KB}/${kb.id}/dirs/${b.id}/delete`, owner, 'DELETE')).toEqual({ status: 200, body: { status: true } });
    expect(await relativePaths(kb.id)).toEqual(['a/deep.md', 'a/mid.md']);
    expect(await db`select id from knowledge_directory where id = any(${[b.id, c.id]}::text[])`).toHaveLength(0);
    // Delete "a" dropping files: they leave the base (the file rows stay).
    expect(await call(`${KB}/${kb.id}/dirs/${a.id}/delete?move_files=false`, owner, 'DELETE')).toEqual({ status: 200, body: { status: true } });
    expect(await relativePaths(kb.id)).toEqual([]);
    expect(await db`select id from file where id = any(${[f1, f2]}::text[])`).toHaveLength(2);
    expect(await call(`${KB}/${kb.id}/dirs/${a.id}/delete`, owner, 'DELETE')).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    const names = (await eventsNamed(db, 'knowledge.directory.deleted')).filter((e) => e.data.knowledge_id === kb.id).map((e) => e.data.name);
    expect(names).toEqual(['bee', 'a']);
  });
});

describe('directories under concurrent writes', () => {
  it('two creates of one name at once: one directory, the other answer Open WebUI’s 400', async () => {
    const kb = await newBase(owner, 'Race');
    const both = await Promise.all([0, 1].map(() => call(`${KB}/${kb.id}/dirs/create`, owner, 'POST', { name: 'same' })));
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(await db`select id from knowledge_directory where knowledge_id = ${kb.id}`).toHaveLength(1);
  });

  it('two crossing moves at once (a under b, b under a) never make a loop', async () => {
    const kb = await newBase(owner, 'Crossing');
    const a = await mkdir(owner, kb.id, 'a');
    const b = await mkdir(owner, kb.id, 'b');
    const both = await Promise.all([
      call(`${KB}/${kb.id}/dirs/${a.id}/update`, owner, 'POST', { parent_id: b.id }),
      call(`${KB}/${kb.id}/dirs/${b.id}/update`, owner, 'POST', { parent_id: a.id }),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    const rows = await db<{ id: string; parent_id: string | null }[]>`select id, parent_id from knowledge_directory where knowledge_id = ${kb.id}`;
    expect(rows.filter((r) => r.parent_id === null)).toHaveLength(1);
  });
});

describe('folder sync', () => {
  const folder: LocalFile[] = [
    { path: 'project', filename: 'README.md', content: '# Project' },
    { path: 'project/docs', filename: 'guide.md', content: 'How to use it' },
    { path: 'project/docs/api', filename: 'endpoints.md', content: 'GET /things' },
    { path: 'project/docs/api', filename: 'errors.md', content: '404 means gone' },
    { path: 'project/src', filename: 'main.ts', content: 'console.log(1)' },
    { path: 'project/src/lib/util', filename: 'strings.ts', content: 'export const s = 1' },
    { path: '', filename: 'top.txt', content: 'at the root' },
  ];
  const expected = folder.map((f) => (f.path ? `${f.path}/${f.filename}` : f.filename)).sort();

  it('a nested folder keeps every relative path; syncing it again uploads nothing', async () => {
    const kb = await newBase(owner, 'Synced');
    const first = await syncFolder(owner, kb.id, folder);
    expect(first.diff).toEqual({
      added: folder.map((f) => ({ filename: f.filename, path: f.path })),
      modified: [],
      deleted: [],
      mkdir: ['project', 'project/docs', 'project/src', 'project/docs/api', 'project/src/lib', 'project/src/lib/util'],
      rmdir: [],
      unmodified_count: 0,
      directory_map: {},
    });
    expect(first.uploaded).toBe(7);
    expect(await relativePaths(kb.id)).toEqual(expected);

    const again = await syncFolder(owner, kb.id, folder);
    expect(again.uploaded).toBe(0);
    expect(again.diff).toMatchObject({ added: [], modified: [], deleted: [], mkdir: [], rmdir: [], unmodified_count: 7 });
    expect(Object.keys(again.diff.directory_map).sort()).toEqual(['project', 'project/docs', 'project/docs/api', 'project/src', 'project/src/lib', 'project/src/lib/util']);
    expect(await relativePaths(kb.id)).toEqual(expected);

    // One file changed, one deleted (and with it the only file of two directories).
    const changed = folder
      .filter((f) => f.filename !== 'strings.ts')
      .map((f) => (f.filename === 'guide.md' ? { ...f, content: 'How to use it, second edition' } : f));
    const before = await db<{ id: string; filename: string; path: string }[]>`select f.id, f.filename, f.path from knowledge_file kf join file f on f.id = kf.file_id where kf.knowledge_id = ${kb.id}`;
    const blobOf = (name: string) => join(tmpdir(), `gatehouse-${stack.ns}-uploads`, before.find((r) => r.filename === name)!.path);
    expect(existsSync(blobOf('strings.ts'))).toBe(true);
    const idOf = (name: string) => before.find((r) => r.filename === name)!.id;
    const third = await syncFolder(owner, kb.id, changed);
    expect(third.diff.added).toEqual([]);
    expect(third.diff.modified).toEqual([{ filename: 'guide.md', path: 'project/docs', stale_file_id: idOf('guide.md') }]);
    expect(third.diff.deleted).toEqual([{ file_id: idOf('strings.ts'), filename: 'strings.ts' }]);
    expect(third.diff.mkdir).toEqual([]);
    expect(third.diff.rmdir).toEqual([again.diff.directory_map['project/src/lib'], again.diff.directory_map['project/src/lib/util']]);
    expect(third.diff.unmodified_count).toBe(5);
    expect(third.uploaded).toBe(1);
    expect(await relativePaths(kb.id)).toEqual(expected.filter((p) => !p.endsWith('strings.ts')));
    const guide = await db<{ content: string }[]>`
      select f.data->>'content' as content from knowledge_file kf join file f on f.id = kf.file_id where kf.knowledge_id = ${kb.id} and f.filename = 'guide.md'`;
    expect(guide.map((g) => g.content)).toEqual(['How to use it, second edition']);
    // The replaced and deleted files are gone (their stored bytes too), their directories too.
    expect(await db`select id from file where id = any(${[idOf('guide.md'), idOf('strings.ts')]}::text[])`).toHaveLength(0);
    expect(existsSync(blobOf('strings.ts'))).toBe(false);
    expect(existsSync(blobOf('guide.md'))).toBe(false);
    expect(existsSync(blobOf('main.ts'))).toBe(true);
    expect(await db`select id from knowledge_directory where knowledge_id = ${kb.id} and name in ('lib', 'util')`).toHaveLength(0);

    const removed = (await eventsNamed(db, 'knowledge.file.removed')).filter((e) => e.data.knowledge_id === kb.id).map((e) => e.data.filename).sort();
    expect(removed).toEqual(['guide.md', 'strings.ts']);

    // The export is a zip of the extracted texts that keeps the folder's structure.
    const zip = await fetch(`${edge.chatUrl}${KB}/${kb.id}/export`, { headers: { authorization: `Bearer ${admin.token}` } });
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    expect(zip.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''Synced.zip");
    const entries = unzipSync(new Uint8Array(await zip.arrayBuffer()));
    const names = Object.keys(entries).filter((n) => !n.endsWith('/')).sort();
    expect(names).toEqual(expected.filter((p) => !p.endsWith('strings.ts')).map((p) => (p.endsWith('.txt') ? p : `${p}.txt`)).sort());
    expect(strFromU8(entries['project/docs/guide.md.txt']!)).toBe('How to use it, second edition');
    expect(strFromU8(entries['project/docs/api/errors.md.txt']!)).toBe('404 means gone');
    // Open WebUI's export is for admins; the owner gets its 401.
    expect((await call(`${KB}/${kb.id}/export`, owner)).status).toBe(401);
  });

  it('refuses a malformed manifest with the 422 list, and readers may not sync', async () => {
    const kb = await newBase(owner, 'Sync rules');
    const r = await call(`${KB}/${kb.id}/sync/diff`, owner, 'POST', { manifest: [{ filename: 'a', path: '', checksum: 'x', size: 'big' }] });
    expect(r.status).toBe(422);
    expect(r.body.detail[0]).toMatchObject({ loc: ['body', 'manifest', 0, 'size'] });
    await share(owner, kb.id, [{ principal_type: 'user', principal_id: reader.id, permission: 'read' }]);
    expect(await call(`${KB}/${kb.id}/sync/diff`, reader, 'POST', { manifest: [] })).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await call(`${KB}/${kb.id}/sync/cleanup`, reader, 'POST', { file_ids: [] })).toEqual({ status: 403, body: { detail: PROHIBITED } });
  });
});

describe('reindex', () => {
  it('is for admins (401 otherwise) and re-queues every linked file', async () => {
    expect(await call(`${KB}/reindex`, owner, 'POST')).toEqual({ status: 401, body: { detail: '401 Unauthorized' } });
    expect(await call(`${KB}/reindex`, admin, 'POST')).toEqual({ status: 200, body: true });
    const linked = await db<{ n: number }[]>`select count(distinct file_id)::int as n from knowledge_file`;
    const [ev] = (await eventsNamed(db, 'knowledge.reindexed')).slice(-1);
    expect(ev.data).toEqual({ file_count: linked[0]!.n });
    expect(ev.data.file_count).toBeGreaterThan(0);
  });
});
