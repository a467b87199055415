import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Document, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { INGEST_CONSUMER, INGEST_STREAM } from '../../services/chat-worker/src/knowledge/ingest-queue.ts';
import { chatClient, chatDb, eventsAbout, NOT_FOUND, type Account } from './chat-fixture.ts';

/**
 * Files on the chat face (Open WebUI 0.10.2's /api/v1/files) over real HTTP with real workers:
 * multipart uploads streamed through the edge into the object store and on into the
 * content-addressed upload store, processing by the ingest worker off the request path (text,
 * PDF and DOCX built here at run time, a corrupt PDF), the size limit's 413, the status event
 * stream, owner/admin/stranger rules, deletion, and an ingest worker killed mid-job that
 * finishes the file after a restart.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const uploadDir = join(tmpdir(), `gatehouse-${stack.ns}-uploads`);
/** The limit for this stack: small, so the 413 needs no large upload (Open WebUI's variable, in MB). */
const MAX_MB = 0.25;
/** Slow jobs down (per embedding batch of 4 chunks) so the crash test lands mid-job; ack wait short so the restart picks the job up soon. */
const INGEST_ENV = { INGEST_BATCH_DELAY_MS: '400', INGEST_EMBED_BATCH: '4', INGEST_ACK_WAIT_MS: '1500', INGEST_CONCURRENCY: '1' };

let admin: Account, owner: Account, stranger: Account;

const TOO_LARGE = `Oops! The file you're trying to upload is too large. Please upload a file that is less than ${MAX_MB} MB.`;
const FILE_KEYS = ['created_at', 'data', 'filename', 'hash', 'id', 'meta', 'updated_at', 'user_id'];

async function upload(who: Account | null, name: string, bytes: Uint8Array | string, type: string, opts: { query?: string; metadata?: unknown } = {}) {
  const form = new FormData();
  form.append('file', new Blob([typeof bytes === 'string' ? bytes : Buffer.from(bytes)], { type }), name);
  if (opts.metadata !== undefined) form.append('metadata', typeof opts.metadata === 'string' ? opts.metadata : JSON.stringify(opts.metadata));
  const r = await fetch(`${edge.chatUrl}/api/v1/files/${opts.query ?? ''}`, { method: 'POST', headers: who ? { authorization: `Bearer ${who.token}` } : {}, body: form });
  return { status: r.status, body: await r.json(), headers: r.headers };
}

/** Upload and expect 200. */
async function uploaded(who: Account, name: string, bytes: Uint8Array | string, type: string, opts: { query?: string; metadata?: unknown } = {}) {
  const r = await upload(who, name, bytes, type, opts);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

/** The file's row once processing has settled (completed or failed), bounded in time. */
async function settled(id: string): Promise<any> {
  let row: any;
  await waitFor(
    async () => {
      [row] = await db`select data, hash, path from file where id = ${id}`;
      return row && row.data.status !== 'pending';
    },
    60_000,
    () => `file ${id} still ${row?.data?.status}:\n${stack.ingest?.log().slice(-3000)}`,
  );
  return row;
}

/** Blobs in the upload store (staging excluded). */
function blobs(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir)) {
      if (e === '.tmp') continue;
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  try {
    walk(uploadDir);
  } catch {
    return [];
  }
  return out;
}

async function pdfBytes(lines: string[]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage();
  lines.forEach((l, i) => page.drawText(l, { x: 50, y: 750 - i * 20, font, size: 12 }));
  return doc.save();
}

beforeAll(async () => {
  // The edge enforces the limit; the worker keeps its default (100 MB) so the second edge below can pass a big file.
  await stack.startChatWorker({}, { ingest: false });
  await stack.startIngestWorker(INGEST_ENV);
  edge = await stack.startEdge({ EDGE_FACES: 'chat', RAG_FILE_MAX_SIZE: String(MAX_MB) });
  admin = await signup();
  owner = await addUser(admin, 'Owner');
  stranger = await addUser(admin, 'Stranger');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('upload, read back, process', () => {
  it('stores a text upload, answers FileModelResponse at once, and processes it off the request path', async () => {
    const text = `# Lighthouse notes\n\n${'The keeper trims the wick at dusk. '.repeat(60)}\n\nEnd of notes.`;
    const f = await uploaded(owner, 'notes.md', text, 'text/markdown', { metadata: { purpose: 'test' } });
    expect(Object.keys(f).filter((k) => k !== 'status' && k !== 'path' && k !== 'access_control').sort()).toEqual(FILE_KEYS);
    expect(f).toMatchObject({ status: true, user_id: owner.id, filename: 'notes.md', data: { status: 'pending' } });
    expect(f.meta).toMatchObject({ name: 'notes.md', content_type: 'text/markdown', size: Buffer.byteLength(text), data: { purpose: 'test' } });
    expect(f.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(f.meta.file_hash).toBe(f.hash);

    const row = await settled(f.id);
    expect(row.data.status).toBe('completed');
    expect(row.data.content).toBe(text);
    const { n } = (await db<{ n: number }[]>`select count(*)::int as n from file_chunk where file_id = ${f.id}`)[0]!;
    expect(n).toBeGreaterThan(1);
    // Every chunk is embedded with the model's dimension.
    const { dims } = (await db<{ dims: number }[]>`select min(vector_dims(embedding)) as dims from file_chunk where file_id = ${f.id}`)[0]!;
    expect(dims).toBeGreaterThan(0);
    // Each chunk's meta is a JSON object (not a JSON string) naming its file and where it starts.
    const metas = await db<{ kind: string; file_id: string }[]>`select jsonb_typeof(meta) as kind, meta->>'file_id' as file_id from file_chunk where file_id = ${f.id}`;
    expect(metas.every((m) => m.kind === 'object' && m.file_id === f.id)).toBe(true);

    expect(await call(`/api/v1/files/${f.id}/process/status`, owner)).toMatchObject({ status: 200, body: { status: 'completed' } });
    expect(await call(`/api/v1/files/${f.id}/data/content`, owner)).toMatchObject({ status: 200, body: { content: text } });
    const got = await call(`/api/v1/files/${f.id}`, owner);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: f.id, hash: f.hash, filename: 'notes.md', data: { status: 'completed', content: text } });

    const events = await eventsAbout(db, f.id);
    expect(events.map((e) => e.event)).toEqual(['file.uploaded', 'file.content_updated']);
    expect(events[0].data).toMatchObject({ filename: 'notes.md', content_type: 'text/markdown', size: Buffer.byteLength(text), hash: f.hash });
    expect(events[1].data).toEqual({ status: 'completed', chunk_count: n });
  });

  it('answers once processed with process_in_background=false', async () => {
    const f = await uploaded(owner, 'now.txt', 'processed before the answer', 'text/plain', { query: '?process=true&process_in_background=false' });
    expect(f).toMatchObject({ status: true, data: { status: 'completed', content: 'processed before the answer' } });
    const bad = await uploaded(owner, 'now.pdf', 'no pdf', 'application/pdf', { query: '?process_in_background=false' });
    expect(bad.data.status).toBe('failed');
    expect(bad.data.error).toMatch(/^Could not read the PDF/);
    expect((await upload(owner, 'x.txt', 'x', 'text/plain', { query: '?process=maybe' })).status).toBe(422);
  });

  it('replaces the extracted text on request and processes the new text', async () => {
    const f = await uploaded(owner, 'draft.txt', 'first draft about anchors', 'text/plain');
    expect((await settled(f.id)).data.status).toBe('completed');
    const before = await db`select content from file_chunk where file_id = ${f.id}`;
    expect(before.map((r) => r.content)).toEqual(['first draft about anchors']);
    expect(await call(`/api/v1/files/${f.id}/data/content/update`, stranger, 'POST', { content: 'x' })).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    const r = await call(`/api/v1/files/${f.id}/data/content/update`, owner, 'POST', { content: 'second draft about buoys' });
    expect(r).toEqual({ status: 200, body: { content: 'second draft about buoys' } });
    const row = await settled(f.id);
    expect(row.data).toMatchObject({ status: 'completed', content: 'second draft about buoys' });
    expect((await db`select content from file_chunk where file_id = ${f.id}`).map((c) => c.content)).toEqual(['second draft about buoys']);
    // The stored bytes are untouched.
    const bytes = await fetch(`${edge.chatUrl}/api/v1/files/${f.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(await bytes.text()).toBe('first draft about anchors');
  });

  it('downloads the exact bytes with the type and disposition Open WebUI gives', async () => {
    const bytes = randomBytes(200 * 1024 + 17);
    const f = await uploaded(owner, 'blob.bin', bytes, 'application/octet-stream', { query: '?process=false' });
    expect(f.data).toEqual({});
    expect(f.status).toBeUndefined();
    const r = await fetch(`${edge.chatUrl}/api/v1/files/${f.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''blob.bin`);
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true);

    const txt = await uploaded(owner, 'read me.txt', 'plain words', 'text/plain', { query: '?process=false' });
    const t = await fetch(`${edge.chatUrl}/api/v1/files/${txt.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(t.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(t.headers.get('content-disposition')).toBeNull();
    expect(await t.text()).toBe('plain words');
    const a = await fetch(`${edge.chatUrl}/api/v1/files/${txt.id}/content?attachment=true`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(a.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''read%20me.txt`);
    expect(await a.text()).toBe('plain words');
    // A file never processed has no status: Open WebUI answers `pending`.
    expect((await call(`/api/v1/files/${txt.id}/process/status`, owner)).body).toEqual({ status: 'pending' });
  });

  it('stores the same bytes once however often they are uploaded, and frees them with the last file', async () => {
    const bytes = `same bytes ${randomBytes(8).toString('hex')}`;
    const before = blobs().length;
    const a = await uploaded(owner, 'a.txt', bytes, 'text/plain', { query: '?process=false' });
    const b = await uploaded(admin, 'b.txt', bytes, 'text/plain', { query: '?process=false' });
    expect(a.id).not.toBe(b.id);
    expect(a.hash).toBe(b.hash);
    expect(blobs().length).toBe(before + 1);
    const rows = await db`select path from file where id in (${a.id}, ${b.id})`;
    expect(new Set(rows.map((r) => r.path)).size).toBe(1);
    expect(rows[0]!.path).toBe(`${a.hash.slice(0, 2)}/${a.hash.slice(2, 4)}/${a.hash}`);

    expect(await call(`/api/v1/files/${a.id}`, owner, 'DELETE')).toEqual({ status: 200, body: { message: 'File deleted successfully' } });
    expect(blobs().length).toBe(before + 1);
    const still = await fetch(`${edge.chatUrl}/api/v1/files/${b.id}/content`, { headers: { authorization: `Bearer ${admin.token}` } });
    expect(await still.text()).toBe(bytes);
    expect(await call(`/api/v1/files/${b.id}`, admin, 'DELETE')).toEqual({ status: 200, body: { message: 'File deleted successfully' } });
    expect(blobs().length).toBe(before);
  });

  it('extracts the text of a PDF and of a DOCX built here', async () => {
    const pdf = await uploaded(owner, 'harbour.pdf', await pdfBytes(['Harbour master logbook', 'Tides rise twice daily']), 'application/pdf');
    const docxBytes = await Packer.toBuffer(new Document({ sections: [{ children: [new Paragraph('Quarterly lighthouse inspection'), new Paragraph('Lens polished and beacon tested')] }] }));
    const docx = await uploaded(owner, 'inspection.docx', docxBytes, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    const p = await settled(pdf.id);
    expect(p.data.status).toBe('completed');
    expect(p.data.content).toContain('Harbour master logbook');
    expect(p.data.content).toContain('Tides rise twice daily');
    const d = await settled(docx.id);
    expect(d.data.status).toBe('completed');
    expect(d.data.content).toContain('Quarterly lighthouse inspection');
    expect(d.data.content).toContain('Lens polished and beacon tested');
    // A PDF is shown inline, as Open WebUI serves it.
    const r = await fetch(`${edge.chatUrl}/api/v1/files/${pdf.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(r.headers.get('content-type')).toBe('application/pdf');
    expect(r.headers.get('content-disposition')).toBe(`inline; filename*=UTF-8''harbour.pdf`);
    await r.arrayBuffer();
  });

  it('fails a corrupt PDF and an unsupported file with a reason, never a hung pending', async () => {
    const bad = await uploaded(owner, 'broken.pdf', '%PDF-1.7\nthis is not really a pdf\n%%EOF', 'application/pdf');
    const img = await uploaded(owner, 'pixel.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0, 1, 2]), 'image/png');
    const b = await settled(bad.id);
    expect(b.data.status).toBe('failed');
    expect(b.data.error).toMatch(/^Could not read the PDF: /);
    const i = await settled(img.id);
    expect(i.data).toMatchObject({ status: 'failed', error: 'File type image/png is not supported for processing' });
    expect((await call(`/api/v1/files/${bad.id}/process/status`, owner)).body).toEqual({ status: 'failed' });
    const [ev] = (await eventsAbout(db, bad.id)).filter((e) => e.event === 'file.content_updated');
    expect(ev.data).toEqual({ status: 'failed', error: b.data.error });
  });

  it('streams the processing status as Server-Sent Events until it settles', async () => {
    const f = await uploaded(owner, 'stream.txt', 'status stream '.repeat(20), 'text/plain');
    const r = await fetch(`${edge.chatUrl}/api/v1/files/${f.id}/process/status?stream=true`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await r.text()).split('\n\n').filter(Boolean);
    for (const e of events) expect(e).toMatch(/^data: \{.*\}$/);
    const statuses = events.map((e) => JSON.parse(e.slice('data: '.length)));
    expect(statuses.at(-1)).toEqual({ status: 'completed' });
    expect(statuses.slice(0, -1).every((s) => s.status === 'pending')).toBe(true);

    const bad = await uploaded(owner, 'bad.pdf', 'not a pdf at all', 'application/pdf');
    const s = await fetch(`${edge.chatUrl}/api/v1/files/${bad.id}/process/status?stream=true`, { headers: { authorization: `Bearer ${owner.token}` } });
    const last = JSON.parse((await s.text()).trim().split('\n\n').at(-1)!.slice('data: '.length));
    expect(last.status).toBe('failed');
    expect(last.error).toMatch(/^Could not read the PDF/);
    // Someone else's file: the 404 comes before any event.
    expect(await call(`/api/v1/files/${f.id}/process/status?stream=true`, stranger)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
  });
});

describe('limits and bad input', () => {
  it('answers 413 over RAG_FILE_MAX_SIZE, keeps nothing, and leaves no partial object', async () => {
    const before = (await db`select count(*)::int as n from file`)[0]!.n;
    const r = await upload(owner, 'huge.bin', randomBytes(Math.floor(MAX_MB * 1024 * 1024) + 1), 'application/octet-stream');
    expect(r).toMatchObject({ status: 413, body: { detail: TOO_LARGE } });
    expect((await db`select count(*)::int as n from file`)[0]!.n).toBe(before);
    // Exactly at the limit is fine.
    const ok = await upload(owner, 'edge.bin', randomBytes(Math.floor(MAX_MB * 1024 * 1024)), 'application/octet-stream', { query: '?process=false' });
    expect(ok.status).toBe(200);
    const bus = await stack.busHandle();
    const store = await bus.claims();
    const left: string[] = [];
    for (const o of await store.list()) if (o.name.startsWith('upload-')) left.push(o.name);
    expect(left).toEqual([]);
  });

  it('takes a file bigger than the face’s JSON body limit (16 MB) when the limit allows it', async () => {
    const roomy = await stack.startEdge({ EDGE_FACES: 'chat' });
    const bytes = randomBytes(17 * 1024 * 1024);
    const form = new FormData();
    form.append('file', new Blob([bytes]), 'big.bin');
    const r = await fetch(`${roomy.chatUrl}/api/v1/files/?process=false`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
    const body = await r.json();
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.meta.size).toBe(bytes.length);
    const back = await fetch(`${roomy.chatUrl}/api/v1/files/${body.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(Buffer.from(await back.arrayBuffer()).equals(bytes)).toBe(true);
    await roomy.proc.stop();
  });

  it('answers FastAPI’s 422 without a file, 400 for bad metadata, 401 without a token', async () => {
    const form = new FormData();
    form.append('metadata', '{}');
    const r = await fetch(`${edge.chatUrl}/api/v1/files/`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
    expect(r.status).toBe(422);
    expect(await r.json()).toEqual({ detail: [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null }] });
    expect(await upload(owner, 'x.txt', 'x', 'text/plain', { metadata: '{not json' })).toMatchObject({ status: 400, body: { detail: '[ERROR: Invalid metadata format]' } });
    expect(await upload(null, 'x.txt', 'x', 'text/plain')).toMatchObject({ status: 401, body: { detail: 'Not authenticated' } });
    expect((await call('/api/v1/files/', null)).status).toBe(401);
  });
});

describe('who may see and delete', () => {
  it('lists my files (admin sees everyone’s), hides them from others with a 404, and deletes them', async () => {
    const mine = await uploaded(owner, 'private.txt', 'owner only', 'text/plain', { query: '?process=false' });
    const list = await call('/api/v1/files/', owner);
    expect(list.status).toBe(200);
    expect(list.body.items.map((f: any) => f.id)).toContain(mine.id);
    expect(list.body.total).toBe(list.body.items.length);
    expect(list.body.items.every((f: any) => f.user_id === owner.id)).toBe(true);
    expect((await call('/api/v1/files/', stranger)).body).toEqual({ items: [], total: 0 });
    expect((await call('/api/v1/files/', admin)).body.items.map((f: any) => f.id)).toContain(mine.id);
    expect((await call('/api/v1/files/search?filename=priv*', owner)).body.map((f: any) => f.id)).toEqual([mine.id]);
    expect(await call('/api/v1/files/search?filename=priv*', stranger)).toEqual({ status: 404, body: { detail: 'No files found matching the pattern.' } });

    const nf = { status: 404, body: { detail: NOT_FOUND } };
    for (const path of [`/api/v1/files/${mine.id}`, `/api/v1/files/${mine.id}/process/status`, `/api/v1/files/${mine.id}/data/content`]) {
      expect(await call(path, stranger), path).toEqual(nf);
    }
    expect(await call(`/api/v1/files/${mine.id}/content`, stranger)).toEqual(nf);
    expect(await call(`/api/v1/files/${mine.id}`, stranger, 'DELETE')).toEqual(nf);
    expect(await call(`/api/v1/files/no-such-file`, owner)).toEqual(nf);
    // The admin reads anyone's file.
    expect((await call(`/api/v1/files/${mine.id}`, admin)).status).toBe(200);

    expect((await call('/api/v1/files/count', owner)).body).toBe(list.body.total);
    expect((await call('/api/v1/files/count', stranger)).body).toBe(0);
    expect(await call(`/api/v1/files/${mine.id}/rename`, stranger, 'POST', { filename: 'mine now.txt' })).toEqual(nf);
    const renamed = await call(`/api/v1/files/${mine.id}/rename`, owner, 'POST', { filename: 'renamed.txt' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: mine.id, filename: 'renamed.txt', meta: { name: 'renamed.txt' } });
    expect((await call(`/api/v1/files/${mine.id}/rename`, owner, 'POST', {})).status).toBe(422);

    expect(await call(`/api/v1/files/${mine.id}`, owner, 'DELETE')).toEqual({ status: 200, body: { message: 'File deleted successfully' } });
    expect(await call(`/api/v1/files/${mine.id}`, owner)).toEqual(nf);
    const [ev] = (await eventsAbout(db, mine.id)).filter((e) => e.event === 'file.deleted');
    expect(ev.data).toEqual({ filename: 'renamed.txt' });
    expect((await eventsAbout(db, mine.id)).map((e) => e.event)).toEqual(['file.uploaded', 'file.renamed', 'file.deleted']);
  });
});

describe('uploads into a knowledge base', () => {
  it('links an upload naming metadata.knowledge_id once processed, and readers of the base may read the file', async () => {
    const kb = await call('/api/v1/knowledge/create', owner, 'POST', { name: 'Harbour', description: 'logs' });
    expect(kb.status, JSON.stringify(kb.body)).toBe(200);
    const f = await uploaded(owner, 'tide-table.txt', 'High tide at noon, low tide at six.', 'text/plain', { metadata: { knowledge_id: kb.body.id } });
    expect((await settled(f.id)).data.status).toBe('completed');
    const files = await call(`/api/v1/knowledge/${kb.body.id}/files`, owner);
    expect(files.status).toBe(200);
    expect(files.body.items.map((i: any) => i.id)).toEqual([f.id]);
    const [added] = (await eventsAbout(db, f.id)).filter((e) => e.event === 'knowledge.file.added');
    expect(added.data).toMatchObject({ knowledge_id: kb.body.id, file_id: f.id, filename: 'tide-table.txt' });

    // Someone who may not write to the base cannot slip a file into it through the metadata.
    const sneaky = await uploaded(stranger, 'sneaky.txt', 'not yours', 'text/plain', { metadata: { knowledge_id: kb.body.id } });
    expect((await settled(sneaky.id)).data.status).toBe('completed');
    expect((await call(`/api/v1/knowledge/${kb.body.id}/files`, owner)).body.items.map((i: any) => i.id)).toEqual([f.id]);

    // A read grant on the base opens the file to the grantee, for reading only.
    expect(await call(`/api/v1/files/${f.id}`, stranger)).toMatchObject({ status: 404 });
    const g = await call(`/api/v1/knowledge/${kb.body.id}/access/update`, owner, 'POST', { access_grants: [{ principal_type: 'user', principal_id: stranger.id, permission: 'read' }] });
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect((await call(`/api/v1/files/${f.id}`, stranger)).body).toMatchObject({ id: f.id, filename: 'tide-table.txt' });
    expect((await call(`/api/v1/files/${f.id}/data/content`, stranger)).body).toEqual({ content: 'High tide at noon, low tide at six.' });
    expect(await call(`/api/v1/files/${f.id}`, stranger, 'DELETE')).toEqual({ status: 404, body: { detail: NOT_FOUND } });
  });
});

describe('crash during processing', () => {
  it('finishes a file whose ingest worker was killed (SIGKILL) mid-job, after a restart', async () => {
    // ~40 chunks in batches of 4, each batch held 400 ms: the job takes seconds, the kill lands inside it.
    const text = Array.from({ length: 40 }, (_, i) => `Section ${i}: ${'the beacon turns and the keeper writes the log. '.repeat(20)}`).join('\n\n');
    const f = await uploaded(owner, 'long.txt', text, 'text/plain');
    const bus = await stack.busHandle();
    const jsm = await bus.nc.jetstreamManager();
    // The job is delivered and not yet acked: the worker is inside it.
    await waitFor(async () => (await jsm.consumers.info(bus.bucket(INGEST_STREAM), INGEST_CONSUMER)).num_ack_pending === 1, 20_000, () => 'the job was never picked up');
    const ingest = stack.ingest!;
    await ingest.stop('SIGKILL');
    const [mid] = await db`select data from file where id = ${f.id}`;
    expect(mid!.data.status).toBe('pending');
    expect((await db`select count(*)::int as n from file_chunk where file_id = ${f.id}`)[0]!.n).toBe(0);

    await stack.startIngestWorker(INGEST_ENV);
    const row = await settled(f.id);
    expect(row.data.status).toBe('completed');
    expect(row.data.content).toBe(text);
    const { n } = (await db<{ n: number }[]>`select count(*)::int as n from file_chunk where file_id = ${f.id}`)[0]!;
    expect(n).toBeGreaterThanOrEqual(30);
    // The ack follows the commit: then the job has left the queue.
    let info = await jsm.consumers.info(bus.bucket(INGEST_STREAM), INGEST_CONSUMER);
    await waitFor(async () => (info = await jsm.consumers.info(bus.bucket(INGEST_STREAM), INGEST_CONSUMER)).num_ack_pending === 0, 10_000, () => 'the job was never acked');
    expect(info.num_pending).toBe(0);
    // The restarted worker got the same job again (its second delivery), not a new one.
    const again = stack.ingest!.log().split('\n').filter((l) => l.includes('job delivered again') && l.includes(f.id));
    expect(again.map((l) => JSON.parse(l).delivery)).toEqual([2]);
    const done = (await eventsAbout(db, f.id)).filter((e) => e.event === 'file.content_updated');
    expect(done.map((e) => e.data)).toEqual([{ status: 'completed', chunk_count: n }]);
  });
});

describe('a job that never finishes', () => {
  it('fails the file with a reason once its deliveries are used up, instead of leaving it pending', async () => {
    // One delivery allowed: the attempt killed below is the last one.
    const ingest = stack.ingest!;
    await ingest.stop();
    await stack.startIngestWorker({ ...INGEST_ENV, INGEST_MAX_DELIVER: '1' });
    const text = Array.from({ length: 40 }, (_, i) => `Entry ${i}: ${'the fog horn sounds every thirty seconds. '.repeat(20)}`).join('\n\n');
    const f = await uploaded(owner, 'doomed.txt', text, 'text/plain');
    const bus = await stack.busHandle();
    const jsm = await bus.nc.jetstreamManager();
    await waitFor(async () => (await jsm.consumers.info(bus.bucket(INGEST_STREAM), INGEST_CONSUMER)).num_ack_pending === 1, 20_000, () => 'the job was never picked up');
    await stack.ingest!.stop('SIGKILL');
    expect((await db`select data from file where id = ${f.id}`)[0]!.data.status).toBe('pending');
    await stack.startIngestWorker({ ...INGEST_ENV, INGEST_MAX_DELIVER: '1' });
    const row = await settled(f.id);
    expect(row.data).toMatchObject({ status: 'failed', error: 'Processing stopped: no attempt finished (1 deliveries).' });
    // The job is gone from the queue, not parked there.
    await waitFor(async () => (await jsm.streams.info(bus.bucket(INGEST_STREAM))).state.messages === 0, 10_000, () => 'the job is still in the queue');
    // Back to the usual settings for whatever runs next.
    await stack.ingest!.stop();
    await stack.startIngestWorker(INGEST_ENV);
  });
});

describe('delete all (admin)', () => {
  it('is refused to a user and removes every file and blob for the admin', async () => {
    expect((await call('/api/v1/files/all', owner, 'DELETE')).status).toBe(401);
    const total = (await db`select count(*)::int as n from file`)[0]!.n;
    expect(total).toBeGreaterThan(0);
    expect(await call('/api/v1/files/all', admin, 'DELETE')).toEqual({ status: 200, body: { message: 'All files deleted successfully' } });
    expect((await db`select count(*)::int as n from file`)[0]!.n).toBe(0);
    expect(blobs()).toEqual([]);
    const [ev] = (await db`select event from outbox where event ->> 'event' = 'file.deleted_all'`).map((r) => r.event);
    expect(ev.data).toEqual({ count: total });
  });
});
