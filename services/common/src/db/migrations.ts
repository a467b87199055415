import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Sql } from 'postgres';

const run = promisify(execFile);

/** First line of a migration that cannot be undone: the runner backs the schema up before it. */
export const IRREVERSIBLE_MARK = '-- gatehouse:irreversible';

export interface SchemaMigrationOptions {
  /** Folder of `NNNN_name.sql` files (infra/migrations/<service>). */
  dir: string;
  /** Schema the files are applied in (search_path = schema, public). Created when missing. */
  schema: string;
  /** Connection string for pg_dump (the same database `sql` talks to). */
  databaseUrl: string;
  /** Where backups go; created when missing. */
  backupDir: string;
  /** Progress lines (which files, where the backup went). */
  say?: (line: string) => void;
}

export interface MigrationOutcome {
  applied: string[];
  /** Path of the pg_dump taken before an irreversible file, if one was needed. */
  backup?: string;
}

/**
 * Forward-only migrations of one service schema. Files run in name order, each in one
 * transaction with its row in `<schema>.gatehouse_migrations`; an applied file never runs again.
 * Before the first pending file marked irreversible, the schema is dumped with pg_dump (when it
 * holds any table): no dump, no migration. An advisory lock keeps two starting workers from
 * migrating the same schema at once.
 */
export async function migrateSchema(sql: Sql, opts: SchemaMigrationOptions): Promise<MigrationOutcome> {
  if (!/^[a-z_][a-z0-9_]*$/.test(opts.schema)) throw new Error(`schema "${opts.schema}" is not a lowercase SQL identifier`);
  const files = existsSync(opts.dir) ? readdirSync(opts.dir).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort() : [];
  const say = opts.say ?? (() => undefined);
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(hashtext(${`gatehouse-migrate:${opts.schema}`}))`;
    await conn.unsafe(`create schema if not exists ${opts.schema}`);
    await conn.unsafe(`create table if not exists ${opts.schema}.gatehouse_migrations (
      name text primary key, applied_at timestamptz not null default now())`);
    const done = new Set((await conn.unsafe(`select name from ${opts.schema}.gatehouse_migrations`)).map((r) => r.name as string));
    const pending = files.filter((f) => !done.has(f));
    const outcome: MigrationOutcome = { applied: [] };
    for (const f of pending) {
      const text = readFileSync(join(opts.dir, f), 'utf8');
      if (text.startsWith(IRREVERSIBLE_MARK) && outcome.backup === undefined) {
        outcome.backup = await backupSchema(conn, opts, f);
        if (outcome.backup) say(`backed up schema ${opts.schema} to ${outcome.backup} before ${f} (irreversible)`);
        else say(`schema ${opts.schema} holds no tables yet; nothing to back up before ${f}`);
      }
      // A reserved connection has no begin(): the transaction is spelled out.
      await conn.unsafe('begin');
      try {
        await conn.unsafe(`set local search_path to ${opts.schema}, public`);
        await conn.unsafe(text);
        await conn.unsafe(`insert into ${opts.schema}.gatehouse_migrations (name) values ($1)`, [f]);
        await conn.unsafe('commit');
      } catch (err) {
        await conn.unsafe('rollback').catch(() => undefined);
        throw new Error(`migration ${f} failed in schema ${opts.schema} and was rolled back: ${(err as Error).message}`);
      }
      outcome.applied.push(f);
      say(`applied ${f} in schema ${opts.schema}`);
    }
    return outcome;
  } finally {
    await conn`select pg_advisory_unlock(hashtext(${`gatehouse-migrate:${opts.schema}`}))`.catch(() => undefined);
    conn.release();
  }
}

/** pg_dump of one schema, or undefined when it has no table besides the migration log. */
async function backupSchema(conn: Sql, opts: SchemaMigrationOptions, before: string): Promise<string | undefined> {
  const [counted] = await conn<{ n: number }[]>`select count(*)::int as n from pg_tables
    where schemaname = ${opts.schema} and tablename <> 'gatehouse_migrations'`;
  if (counted!.n === 0) return undefined;
  mkdirSync(opts.backupDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = join(opts.backupDir, `${opts.schema}-before-${before.replace(/\.sql$/, '')}-${stamp}.sql`);
  try {
    await run('pg_dump', ['--dbname', opts.databaseUrl, '--schema', opts.schema, '--no-owner', '--file', file], { timeout: 10 * 60_000 });
  } catch (err) {
    // stderr, not the message: the message repeats the command line, connection string included.
    const why = String((err as { stderr?: string }).stderr ?? '').trim().split('\n')[0] || 'pg_dump failed';
    throw new Error(`pg_dump of schema ${opts.schema} failed, so ${before} was not applied: ${why}`);
  }
  return file;
}
