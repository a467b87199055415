/**
 * Collection snapshots (docs/vector-store.md, "Snapshots"): create, list, delete, read for a
 * download, and recover a collection from a snapshot file (by location, or uploaded).
 *
 * A snapshot is a gzip-compressed NDJSON file, `<collection>-<peer>-<YYYY-MM-DD-hh-mm-ss>.snapshot`:
 *   line 1  `{"format":"gatehouse.vector.snapshot","version":1,"collection":…,"created_at":…,
 *            "config":<the collection's stored config>,"payload_indexes":[{"field_name","field_schema"}]}`
 *   then    one Qdrant PointStruct per line: `{"id","vector","payload"}` (as a scroll returns them)
 *   last    `{"end":true,"points":<count>}` — a file without it is truncated and refused.
 * Beside it, `<name>.checksum` holds the SHA-256 (hex) of the file, reported as `checksum` and
 * checked when a recovery names one. Points are written and read through the store's own scroll
 * and upsert, so the format does not depend on the table layout.
 *
 * Consistency: a snapshot is written from one REPEATABLE READ transaction, so it is one moment of
 * the collection even while writes go on. Recovery replaces the collection (or creates it) in one
 * transaction: a bad or truncated file leaves the existing collection as it was. Its aliases
 * follow it.
 *
 * Files live in `<VECTOR_SNAPSHOT_DIR>/<schema>/<collection, URI-encoded>/`.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline as pipelineCb, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGunzip, createGzip } from 'node:zlib';
import type postgres from 'postgres';
import { parseExactJson, stringifyExactJson } from '@gatehouse/common';
import {
  QdrantPointInsertOperations,
  QdrantScrollRequest,
  QdrantSnapshotRecover,
  type QdrantPointId,
  type QdrantSnapshotDescription,
} from '@gatehouse/contracts';
import { assertNotAnAlias, resolveName } from '../collections/aliases.ts';
import { isUndefinedTable, loadCollection, tableOf, type StoredConfig } from '../collections/catalog.ts';
import { createPointTable } from '../collections/collections.ts';
import { dropSparseIndex } from '../vectors/sparse.ts';
import { parseBody } from '../common.ts';
import { notFoundCollection, QdrantError } from '../errors.ts';
import * as points from '../points/points.ts';
import * as reads from '../points/reads.ts';
import { PEER_ID } from '../collections/telemetry.ts';

export const SNAPSHOT_FORMAT = 'gatehouse.vector.snapshot';
export const SNAPSHOT_VERSION = 1;
/** Points per scroll page when writing, and per upsert when recovering. */
const PAGE = 500;
/** The longest line a recovery reads: a point is at most a 32 MB request body, with room to spare. */
const MAX_LINE = 64 * 1024 * 1024;

type Header = {
  format: string;
  version: number;
  collection: string;
  created_at: string;
  config: StoredConfig;
  payload_indexes: { field_name: string; field_schema: unknown }[];
};

const badRequest = (msg: string) => new QdrantError(400, `Bad request: ${msg}`);
const snapshotNotFound = (name: string) => new QdrantError(404, `Not found: Snapshot ${name} not found`);

export class SnapshotStore {
  constructor(
    private readonly sql: postgres.Sql,
    private readonly schema: string,
    /** VECTOR_SNAPSHOT_DIR */
    readonly root: string,
    /** Called after a recovery replaced (or failed to replace) a collection: cached metadata is stale (catalog.ts CatalogCache). */
    private readonly onCatalogChange: () => void = () => undefined,
  ) {}

  private dirOf(collection: string): string {
    // URI-encoding keeps any collection name (`..` included) one plain directory name.
    return join(this.root, this.schema, `c-${encodeURIComponent(collection)}`);
  }

  /** The file of snapshot `name` of `collection`; 404 for a name that is not one of its snapshots. */
  async pathOf(collection: string, name: string): Promise<string> {
    const meta = await loadCollection(this.sql, this.schema, collection);
    if (!/^[^/\\]+\.snapshot$/.test(name) || name.startsWith('.')) throw snapshotNotFound(name);
    const path = join(this.dirOf(meta.name), name);
    if (!(await stat(path).catch(() => null))?.isFile()) throw snapshotNotFound(name);
    return path;
  }

  private async describe(dir: string, name: string): Promise<QdrantSnapshotDescription | null> {
    const s = await stat(join(dir, name)).catch(() => null);
    if (!s?.isFile()) return null;
    const checksum = await readFile(join(dir, `${name}.checksum`), 'utf8').catch(() => null);
    // Qdrant prints creation_time as a naive UTC date-time.
    return { name, creation_time: s.mtime.toISOString().slice(0, 19), size: s.size, checksum: checksum?.trim() || null };
  }

  /** `GET /collections/{c}/snapshots` (404 when the collection does not exist), newest last. */
  async list(collection: string): Promise<QdrantSnapshotDescription[]> {
    // Through an alias, the snapshots of the collection it names.
    const dir = this.dirOf((await loadCollection(this.sql, this.schema, collection)).name);
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.snapshot') && !n.startsWith('.'));
    const out: QdrantSnapshotDescription[] = [];
    for (const n of names.sort()) {
      const d = await this.describe(dir, n);
      if (d) out.push(d);
    }
    return out;
  }

  /** Snapshots kept for `collection` (telemetry). */
  async count(collection: string): Promise<number> {
    const names = await readdir(this.dirOf(collection)).catch(() => [] as string[]);
    return names.filter((n) => n.endsWith('.snapshot') && !n.startsWith('.')).length;
  }

  /** `POST /collections/{c}/snapshots`: one transaction's view of the collection, written to a new file. */
  async create(collection: string): Promise<QdrantSnapshotDescription> {
    const meta0 = await loadCollection(this.sql, this.schema, collection);
    const dir = this.dirOf(meta0.name);
    await mkdir(dir, { recursive: true });
    const stamp = new Date().toISOString().slice(0, 19).replace(/[T:]/g, '-');
    let name = `${meta0.name}-${PEER_ID}-${stamp}.snapshot`;
    // Two snapshots in the same second get distinct names.
    for (let i = 1; await stat(join(dir, name)).catch(() => null); i++) name = `${meta0.name}-${PEER_ID}-${stamp}-${i}.snapshot`;
    const tmp = join(dir, `.tmp-${randomUUID()}`);
    const hash = createHash('sha256');
    try {
      await this.sql.begin('isolation level repeatable read read only', async (tx) => {
        const meta = await loadCollection(tx, this.schema, collection);
        const indexes = await tx<{ field: string; schema: unknown }[]>`
          select field, schema from ${tx(this.schema)}.payload_indexes where collection_id = ${meta.id} order by field`;
        const [counted] = await tx<{ n: string }[]>`select count(*)::text as n from ${tableOf(tx, this.schema, meta)}`;
        const n = Number(counted!.n);
        const header: Header = {
          format: SNAPSHOT_FORMAT,
          version: SNAPSHOT_VERSION,
          collection: meta.name,
          created_at: new Date().toISOString(),
          config: meta.config,
          payload_indexes: indexes.map((i) => ({ field_name: i.field, field_schema: i.schema })),
        };
        const schema = this.schema;
        async function* lines(): AsyncGenerator<string> {
          yield `${JSON.stringify(header)}\n`;
          let offset: QdrantPointId | null | undefined;
          let written = 0;
          // Bounded: one page more than the count seen in this same snapshot of the data.
          for (let page = 0; page <= Math.ceil(n / PAGE); page++) {
            const req = parseBody(QdrantScrollRequest, { limit: PAGE, offset, with_payload: true, with_vector: true });
            const res = await reads.scroll(tx, schema, meta, req);
            for (const p of res.points) yield `${stringifyExactJson({ id: p.id, vector: p.vector ?? {}, payload: p.payload ?? {} })}\n`;
            written += res.points.length;
            offset = res.next_page_offset;
            if (offset === null) break;
          }
          yield `${JSON.stringify({ end: true, points: written })}\n`;
        }
        const tap = new Transform({
          transform(chunk: Buffer, _enc, done) {
            hash.update(chunk);
            done(null, chunk);
          },
        });
        await pipeline(Readable.from(lines()), createGzip(), tap, createWriteStream(tmp));
      });
      await writeFile(join(dir, `${name}.checksum`), hash.digest('hex'));
      await rename(tmp, join(dir, name));
    } catch (err) {
      await rm(tmp, { force: true });
      // The collection was deleted between loading it and reading its table.
      if (isUndefinedTable(err)) throw notFoundCollection(collection);
      throw err;
    }
    return (await this.describe(dir, name))!;
  }

  /** `DELETE /collections/{c}/snapshots/{name}` */
  async delete(collection: string, name: string): Promise<true> {
    const path = await this.pathOf(collection, name);
    await rm(path);
    await rm(`${path}.checksum`, { force: true });
    return true;
  }

  /** `PUT /collections/{c}/snapshots/recover`: from `file://` (inside the snapshot directory) or `http(s)://`. */
  async recoverFromLocation(collection: string, body: unknown): Promise<true> {
    const req = parseBody(QdrantSnapshotRecover, body);
    let url: URL;
    try {
      url = new URL(req.location);
    } catch {
      throw new QdrantError(422, `Validation error in JSON body: [location: invalid URL]`);
    }
    if (url.protocol === 'file:') {
      let path: string;
      try {
        path = resolve(fileURLToPath(url));
      } catch {
        // `file://whatever.snapshot` names a host: Qdrant's 400, not a thrown TypeError (a 500).
        throw badRequest('Invalid snapshot URI, file path must be absolute or on localhost');
      }
      // Only files this store wrote or was given: a client must not make the worker read any file
      // on its host, nor learn which exist, so a path outside the snapshot directory reads as absent.
      const inside = path.startsWith(resolve(this.root) + sep);
      if (!inside || !(await stat(path).catch(() => null))?.isFile()) throw badRequest(`Snapshot file ${JSON.stringify(path)} does not exist`);
      return this.recoverFile(collection, path, req.checksum);
    }
    if (url.protocol === 'http:' || url.protocol === 'https:') {
      const tmp = await this.tempFile();
      try {
        const res = await fetch(url, { headers: req.api_key ? { 'api-key': req.api_key } : {} }).catch((err: Error) => {
          throw badRequest(`Failed to download snapshot from ${url.href}: ${err.message}`);
        });
        if (!res.ok || !res.body) throw badRequest(`Failed to download snapshot from ${url.href}: status ${res.status}`);
        await pipeline(Readable.fromWeb(res.body as never), createWriteStream(tmp));
        return await this.recoverFile(collection, tmp, req.checksum);
      } finally {
        await rm(tmp, { force: true });
      }
    }
    throw badRequest(`Unsupported snapshot location scheme: ${url.protocol.replace(/:$/, '')}`);
  }

  /** A fresh temporary file name under the snapshot directory (for uploads and downloads). */
  async tempFile(): Promise<string> {
    const dir = join(this.root, this.schema);
    await mkdir(dir, { recursive: true });
    return join(dir, `.tmp-${randomUUID()}`);
  }

  /** Replace (or create) `collection` with the snapshot in `path`, in one transaction. */
  async recoverFile(target: string, path: string, checksum?: string): Promise<true> {
    try {
      return await this.recover(target, path, checksum);
    } finally {
      this.onCatalogChange();
    }
  }

  private async recover(target: string, path: string, checksum?: string): Promise<true> {
    // Recovering through an alias replaces the collection it names (its aliases follow it).
    const collection = await resolveName(this.sql, this.schema, target);
    if (checksum !== undefined) {
      const actual = await sha256(path);
      if (actual !== checksum.toLowerCase()) throw new QdrantError(400, `Checksum mismatch: expected ${checksum}, actual ${actual}`);
    }
    // One pipeline, so a read or gunzip error reaches the line reader instead of going unhandled;
    // a line longer than MAX_LINE is refused before readline would hold it all in memory.
    let sinceNewline = 0;
    const lineGuard = new Transform({
      transform(chunk: Buffer, _enc, done) {
        const nl = chunk.lastIndexOf(10);
        sinceNewline = nl === -1 ? sinceNewline + chunk.length : chunk.length - nl - 1;
        if (sinceNewline > MAX_LINE) return done(badRequest(`a snapshot line is longer than ${MAX_LINE} bytes`));
        done(null, chunk);
      },
    });
    const input = pipelineCb(createReadStream(path), createGunzip(), lineGuard, () => undefined);
    const rl = createInterface({ input, crlfDelay: Infinity });
    const it = rl[Symbol.asyncIterator]();
    const next = async (): Promise<Record<string, unknown> | null> => {
      try {
        const r = await it.next();
        if (r.done) return null;
        return parseExactJson(r.value) as Record<string, unknown>;
      } catch (err) {
        if (err instanceof QdrantError) throw err;
        throw badRequest('the file is not a snapshot of this store (not gzip-compressed NDJSON)');
      }
    };
    try {
      const header = (await next()) as Header | null;
      if (!header || header.format !== SNAPSHOT_FORMAT) throw badRequest('the file is not a snapshot of this store');
      if (header.version !== SNAPSHOT_VERSION) throw badRequest(`snapshot format version ${header.version} is not supported (this store reads ${SNAPSHOT_VERSION})`);
      await this.sql.begin(async (tx) => {
        await assertNotAnAlias(tx, this.schema, collection);
        const s = tx(this.schema);
        const [old] = await tx<{ id: number }[]>`select id from ${s}.collections where name = ${collection} for update`;
        let aliases: string[] = [];
        if (old) {
          aliases = (await tx<{ alias_name: string }[]>`select alias_name from ${s}.aliases where collection_id = ${old.id}`).map((r) => r.alias_name);
          await tx`delete from ${s}.collections where id = ${old.id}`;
          await dropSparseIndex(tx, this.schema, old.id); // it references the point table
          await tx`drop table if exists ${s}.${tx(`points_${old.id}`)}`;
          await tx`drop sequence if exists ${s}.${tx(`points_${old.id}_ops`)}`;
        }
        const config = { ...header.config };
        await tx`insert into ${s}.collections (name, config) values (${collection}, ${tx.json(config as never)})`;
        const meta = await loadCollection(tx, this.schema, collection);
        await createPointTable(tx, this.schema, meta);
        for (const i of header.payload_indexes ?? []) {
          await tx`insert into ${s}.payload_indexes (collection_id, field, schema) values (${meta.id}, ${i.field_name}, ${tx.json(i.field_schema as never)})`;
        }
        for (const a of aliases) await tx`insert into ${s}.aliases (alias_name, collection_id) values (${a}, ${meta.id})`;
        const c = { tx, schema: this.schema, meta: await loadCollection(tx, this.schema, collection), table: tableOf(tx, this.schema, meta) };
        let batch: unknown[] = [];
        let count = 0;
        const flush = async () => {
          if (batch.length === 0) return;
          await points.upsert(c, parseBody(QdrantPointInsertOperations, { points: batch }));
          count += batch.length;
          batch = [];
        };
        for (;;) {
          const line = await next();
          if (line === null) throw badRequest('the snapshot is truncated (no end record)');
          if (line.end === true) {
            await flush();
            if (line.points !== count) throw badRequest(`the snapshot holds ${count} points, its end record says ${String(line.points)}`);
            break;
          }
          batch.push(line);
          if (batch.length >= PAGE) await flush();
        }
      });
    } finally {
      rl.close();
      input.destroy();
    }
    return true;
  }
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}
