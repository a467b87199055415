import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateSchema } from '@gatehouse/common';

/**
 * The forward-only runner the chat worker and scripts/migrate share: each file once, in one
 * transaction; a pg_dump of the schema before anything marked irreversible; no dump, no change.
 */
const url = process.env.TEST_DATABASE_URL!;
const sql = postgres(url, { max: 4, onnotice: () => undefined });
const CHAT = join(import.meta.dirname, '..', '..', 'infra', 'migrations', 'chat');
const CHAT_FILES = readdirSync(CHAT).filter((f) => f.endsWith('.sql')).sort();
const schemas: string[] = [];
const dirs: string[] = [];
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
  await sql.end({ timeout: 5 });
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('chat schema migrations', () => {
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
