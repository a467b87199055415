import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MIGRATIONS_DIR,
  migrateDatabase,
  migrateSchema,
  migrationFiles,
  migrationFolders,
  requireMigrated,
  SchemaNotMigratedError,
} from '@gatehouse/common';
import { spawnService } from '../support/local-stack.ts';

/**
 * The one migration runner (scripts/src/migrate.ts, the compose migrate service and the test
 * stack use it; workers only check): each file once, in one transaction; a pg_dump of the schema
 * before anything marked irreversible; no dump, no change; every folder on an empty database in
 * one run; an old-format database carried forward.
 */
const url = process.env.TEST_DATABASE_URL!;
const sql = postgres(url, { max: 4, onnotice: () => undefined });
const CHAT = join(MIGRATIONS_DIR, 'chat');
const CHAT_FILES = readdirSync(CHAT).filter((f) => f.endsWith('.sql')).sort();
const schemas: string[] = [];
const dirs: string[] = [];
const databases: string[] = [];
/** A database of its own (dropped at the end), for what only a whole database shows. */
const newDatabase = async () => {
  const name = `gatehouse_mig_${randomBytes(5).toString('hex')}`;
  await sql.unsafe(`create database ${name}`);
  databases.push(name);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return { url: u.toString(), sql: postgres(u.toString(), { max: 2, onnotice: () => undefined }) };
};
// The chat files need the platform's vector extension, as on every database the runner migrates.
beforeAll(async () => {
  await migrateDatabase(sql, { folders: ['platform'] });
});
const newSchema = () => {
  const s = `mig_${randomBytes(5).toString('hex')}`;
  schemas.push(s);
  return s;
};
const tempDir = (files: Record<string, string>) => {
  const d = mkdtempSync(join(tmpdir(), 'gatehouse-mig-'));
  dirs.push(d);
  copyFileSync(join(CHAT, '0001_accounts_memories_folders.sql'), join(d, '0001_accounts_memories_folders.sql'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
};
afterAll(async () => {
  for (const s of schemas) await sql.unsafe(`drop schema if exists ${s} cascade`);
  for (const d of databases) await sql.unsafe(`drop database if exists ${d} with (force)`);
  await sql.end({ timeout: 5 });
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('schema migrations (chat files)', () => {
  it('applies the chat migration once, in its schema, and records it', async () => {
    const schema = newSchema();
    const backupDir = tempDir({});
    const lines: string[] = [];
    const first = await migrateSchema(sql, { dir: CHAT, schema, databaseUrl: url, backupDir, say: (l) => lines.push(l) });
    expect(first.applied).toEqual(CHAT_FILES);
    expect(CHAT_FILES[0]).toBe('0001_accounts_memories_folders.sql');
    // An empty schema has nothing to back up, and says so.
    expect(first.backup).toBeUndefined();
    expect(lines.join('\n')).toMatch(/nothing to back up/);
    const tables = (await sql`select tablename from pg_tables where schemaname = ${schema} order by 1`).map((r) => r.tablename);
    expect(tables).toEqual(expect.arrayContaining(['user', 'group', 'group_member', 'folder', 'access_grant', 'chat', 'memory', 'config', 'outbox']));
    const again = await migrateSchema(sql, { dir: CHAT, schema, databaseUrl: url, backupDir });
    expect(again.applied).toEqual([]);
  });

  it('dumps the schema before an irreversible migration and says where; the dump holds the data', async () => {
    const schema = newSchema();
    const dir = tempDir({
      '0002_drop_memory_meta.sql': '-- gatehouse:irreversible\nalter table memory drop column meta;\n',
    });
    const only1 = tempDir({});
    await migrateSchema(sql, { dir: only1, schema, databaseUrl: url, backupDir: only1 });
    await sql.unsafe(`insert into ${schema}."user" (id, email, name, role, password_hash, last_active_at, created_at, updated_at)
      values ('u1', 'keep@example.com', 'Keeper', 'admin', 'scrypt$x', 1, 1, 1)`);
    await sql.unsafe(`insert into ${schema}.memory (id, user_id, content, meta, embedding, created_at, updated_at)
      values ('m1', 'u1', 'remember the lighthouse', '{"created_by":"manual"}', array_fill(0.1::real, array[384])::vector, 1, 1)`);
    const backupDir = join(dir, 'backups');
    const lines: string[] = [];
    const out = await migrateSchema(sql, { dir, schema, databaseUrl: url, backupDir, say: (l) => lines.push(l) });
    expect(out.applied).toEqual(['0002_drop_memory_meta.sql']);
    expect(out.backup).toMatch(new RegExp(`^${backupDir}/${schema}-before-0002_drop_memory_meta-.+\\.sql$`));
    expect(lines.join('\n')).toContain(out.backup!);
    const dump = readFileSync(out.backup!, 'utf8');
    expect(dump).toContain('remember the lighthouse');
    expect(dump).toContain('{"created_by": "manual"}');
    const cols = (await sql`select column_name from information_schema.columns where table_schema = ${schema} and table_name = 'memory'`).map((r) => r.column_name);
    expect(cols).not.toContain('meta');
  });

  it('applies nothing when the backup cannot be taken, and does not leak the connection string', async () => {
    const schema = newSchema();
    const dir = tempDir({ '0002_irreversible.sql': '-- gatehouse:irreversible\ndrop table chat;\n' });
    const only1 = tempDir({});
    await migrateSchema(sql, { dir: only1, schema, databaseUrl: url, backupDir: only1 });
    await sql.unsafe(`insert into ${schema}.config (key, value, updated_at) values ('ENABLE_SIGNUP', 'true', 1)`);
    const secret = randomBytes(8).toString('hex');
    const broken = `postgres://postgres:${secret}@127.0.0.1:1/nowhere`;
    const err = await migrateSchema(sql, { dir, schema, databaseUrl: broken, backupDir: join(dir, 'b') }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/pg_dump of schema .* failed, so 0002_irreversible.sql was not applied/);
    expect((err as Error).message).not.toContain(secret);
    const [t] = await sql`select count(*)::int as n from pg_tables where schemaname = ${schema} and tablename = 'chat'`;
    expect(t!.n).toBe(1);
  });

  it('rolls a failing migration back whole and retries it next time', async () => {
    const schema = newSchema();
    const dir = tempDir({ '0002_half.sql': 'create table half_done (id int);\nselect * from no_such_table;\n' });
    const err = await migrateSchema(sql, { dir, schema, databaseUrl: url, backupDir: dir }).catch((e: Error) => e);
    expect((err as Error).message).toMatch(/0002_half.sql failed .* rolled back/);
    const [t] = await sql`select count(*)::int as n from pg_tables where schemaname = ${schema} and tablename = 'half_done'`;
    expect(t!.n).toBe(0);
    writeFileSync(join(dir, '0002_half.sql'), 'create table half_done (id int);\n');
    expect((await migrateSchema(sql, { dir, schema, databaseUrl: url, backupDir: dir })).applied).toEqual(['0002_half.sql']);
  });

  it('two workers starting together migrate once', async () => {
    const schema = newSchema();
    const outs = await Promise.all([1, 2, 3].map(() => migrateSchema(sql, { dir: CHAT, schema, databaseUrl: url, backupDir: tmpdir() })));
    expect(outs.flatMap((o) => o.applied)).toEqual(CHAT_FILES);
  });
});

describe('every folder, one runner', () => {
  const FOLDERS = migrationFolders();
  const filesOf = (folder: string) => migrationFiles(join(MIGRATIONS_DIR, folder));
  const logOf = async (db: postgres.Sql, schema: string) =>
    (await db.unsafe(`select name from ${schema}.gatehouse_migrations order by name`)).map((r) => r.name as string);

  it('migrates every folder on an empty database in one run, platform first, each in its schema', async () => {
    expect(FOLDERS[0]).toBe('platform');
    expect(FOLDERS).toEqual(expect.arrayContaining(['chat', 'vector']));
    const db = await newDatabase();
    try {
      const out = await migrateDatabase(db.sql, { databaseUrl: db.url, backupDir: tempDir({}) });
      expect(out.map((o) => [o.folder, o.schema])).toEqual(FOLDERS.map((f) => [f, f === 'platform' ? 'public' : f]));
      for (const o of out) {
        expect(o.applied).toEqual(filesOf(o.folder));
        expect(await logOf(db.sql, o.schema)).toEqual(filesOf(o.folder));
      }
      const [ext] = await db.sql`select extnamespace::regnamespace::text as schema from pg_extension where extname = 'vector'`;
      expect(ext?.schema).toBe('public');
      const tables = (await db.sql`select schemaname || '.' || tablename as t from pg_tables where schemaname in ('chat', 'vector')`).map((r) => r.t);
      expect(tables).toEqual(expect.arrayContaining(['chat.user', 'chat.memory', 'vector.collections', 'vector.payload_indexes']));
      // What the workers check at start now passes; a second run has nothing to do.
      await requireMigrated(db.sql, { folder: 'chat', schema: 'chat' });
      await requireMigrated(db.sql, { folder: 'vector', schema: 'vector' });
      expect((await migrateDatabase(db.sql, {})).flatMap((o) => o.applied)).toEqual([]);
    } finally {
      await db.sql.end({ timeout: 5 });
    }
  });

  it('carries an old-format database forward without re-running its files', async () => {
    const db = await newDatabase();
    try {
      // As the three old paths left a database: the platform log with a service column, the chat
      // schema in its own log, the vector catalog created by the worker with no log at all.
      await db.sql`create extension vector`;
      await db.sql`create table gatehouse_migrations (service text not null, name text not null,
        applied_at timestamptz not null default now(), primary key (service, name))`;
      await db.sql`insert into gatehouse_migrations (service, name, applied_at) values ('platform', '0001_extensions.sql', '2020-01-02T03:04:05Z')`;
      await migrateSchema(db.sql, { dir: CHAT, schema: 'chat' });
      await db.sql`insert into chat.config (key, value, updated_at) values ('ENABLE_SIGNUP', 'false', 1)`;
      await db.sql`create schema vector`;
      await db.sql`create table vector.collections (id serial primary key, name text not null unique, config jsonb not null, created_at timestamptz not null default now())`;
      await db.sql`create table vector.payload_indexes (collection_id int not null references vector.collections (id) on delete cascade,
        field text not null, schema jsonb not null, primary key (collection_id, field))`;
      await db.sql`insert into vector.collections (name, config) values ('kept', '{}')`;

      const lines: string[] = [];
      const out = await migrateDatabase(db.sql, { databaseUrl: db.url, backupDir: tempDir({}), say: (l) => lines.push(l) });
      const applied = Object.fromEntries(out.map((o) => [o.folder, o.applied]));
      // Only what the old log lacks: nothing of chat again, the platform's first file not again.
      expect(applied.chat).toEqual([]);
      expect(applied.platform).toEqual(filesOf('platform').filter((f) => f !== '0001_extensions.sql'));
      expect(applied.vector).toEqual(filesOf('vector'));
      expect(lines.join('\n')).toMatch(/carried public.gatehouse_migrations forward/);

      const cols = (await db.sql`select column_name from information_schema.columns
        where table_schema = 'public' and table_name = 'gatehouse_migrations' order by ordinal_position`).map((r) => r.column_name);
      expect(cols).toEqual(['name', 'applied_at']);
      const [first] = await db.sql`select applied_at from public.gatehouse_migrations where name = '0001_extensions.sql'`;
      expect((first!.applied_at as Date).toISOString()).toBe('2020-01-02T03:04:05.000Z');
      expect(await logOf(db.sql, 'public')).toEqual(filesOf('platform'));
      // The data stayed where it was.
      expect((await db.sql`select name from vector.collections`).map((r) => r.name)).toEqual(['kept']);
      expect((await db.sql`select value from chat.config where key = 'ENABLE_SIGNUP'`).map((r) => r.value)).toEqual([false]);
      expect((await migrateDatabase(db.sql, {})).flatMap((o) => o.applied)).toEqual([]);
    } finally {
      await db.sql.end({ timeout: 5 });
    }
  });

  it('refuses an old platform log that lists files of other folders, changing nothing', async () => {
    const db = await newDatabase();
    try {
      await db.sql`create table gatehouse_migrations (service text not null, name text not null,
        applied_at timestamptz not null default now(), primary key (service, name))`;
      await db.sql`insert into gatehouse_migrations (service, name) values ('platform', '0001_extensions.sql'), ('chat', '0001_x.sql')`;
      const err = await migrateDatabase(db.sql, {}).catch((e: Error) => e);
      expect((err as Error).message).toMatch(/also lists files of chat/);
      const [n] = await db.sql`select count(*)::int as n from information_schema.columns where table_name = 'gatehouse_migrations' and column_name = 'service'`;
      expect(n!.n).toBe(1);
    } finally {
      await db.sql.end({ timeout: 5 });
    }
  });
});

describe('workers check, they do not migrate', () => {
  it('requireMigrated names the missing files and what to run', async () => {
    const schema = newSchema();
    const err = await requireMigrated(sql, { folder: 'vector', schema }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(SchemaNotMigratedError);
    expect((err as SchemaNotMigratedError).pending).toEqual(migrationFiles(join(MIGRATIONS_DIR, 'vector')));
    expect((err as Error).message).toMatch(/scripts\/start/);
    expect((err as Error).message).toMatch(/migrate service/);
    expect((err as Error).message).toContain(`VECTOR_SCHEMA=${schema}`);
    await migrateDatabase(sql, { folders: ['vector'], schemas: { vector: schema } });
    await requireMigrated(sql, { folder: 'vector', schema });
  });

  for (const [worker, variable] of [
    ['vector-worker', 'VECTOR_SCHEMA'],
    ['chat-worker', 'CHAT_SCHEMA'],
  ] as const) {
    it(`the ${worker} exits with what to run when its schema is not migrated, and creates nothing`, async () => {
      const schema = newSchema();
      const proc = spawnService(worker, `services/${worker}/src/main.ts`, { DATABASE_URL: url, [variable]: schema, NATS_URL: 'nats://127.0.0.1:1' });
      const code = await new Promise<number | null>((r) => proc.child.once('exit', (c) => r(c)));
      expect(code).toBe(1);
      expect(proc.log()).toMatch(new RegExp(`not started: schema ${schema} lacks \\d+ migration\\(s\\) of infra/migrations/${worker.replace('-worker', '')}`));
      expect(proc.log()).toMatch(/scripts\/start/);
      const [n] = await sql`select count(*)::int as n from pg_namespace where nspname = ${schema}`;
      expect(n!.n).toBe(0);
    });
  }
});
