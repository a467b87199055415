import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Sql } from 'postgres';

const run = promisify(execFile);

/**
 * The one migration path (docs/migrations.md): `infra/migrations/<folder>/NNNN_name.sql`, each
 * folder applied inside one schema by migrateSchema, each schema logging its own files in
 * `<schema>.gatehouse_migrations(name, applied_at)`. scripts/src/migrate.ts (scripts/start, the
 * compose `migrate` service) and the test harness run it; workers only check with requireMigrated.
 */
export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'infra', 'migrations');

/** The folder whose files every other folder builds on (the `vector` extension); it lives in public. */
export const PLATFORM_FOLDER = 'platform';

/** First line of a migration that cannot be undone: the runner backs the schema up before it. */
export const IRREVERSIBLE_MARK = '-- gatehouse:irreversible';

const FILE = /^\d{4}_.+\.sql$/;
const IDENT = /^[a-z_][a-z0-9_]*$/;

export interface SchemaMigrationOptions {
  /** Folder of `NNNN_name.sql` files (infra/migrations/<folder>). */
  dir: string;
  /** Schema the files are applied in (search_path = schema, public). Created when missing. */
  schema: string;
  /** Connection string for pg_dump (the same database `sql` talks to); needed only before an irreversible file. */
  databaseUrl?: string;
  /** Where backups go, created when missing; needed only before an irreversible file. */
  backupDir?: string;
  /** Progress lines (which files, where the backup went). */
  say?: (line: string) => void;
}

export interface MigrationOutcome {
  applied: string[];
  /** Path of the pg_dump taken before an irreversible file, if one was needed. */
  backup?: string;
}

/** The migration files of a folder, in the order they apply. */
export function migrationFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => FILE.test(f)).sort() : [];
}

/** The folders of infra/migrations, platform first (the others need its extensions), then by name. */
export function migrationFolders(root = MIGRATIONS_DIR): string[] {
  const folders = existsSync(root)
    ? readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)
    : [];
  return folders.sort((a, b) => (a === PLATFORM_FOLDER ? -1 : b === PLATFORM_FOLDER ? 1 : a.localeCompare(b)));
}

/** The schema a folder migrates: platform → public, any other → the configured name, else the folder's. */
export function schemaOf(folder: string, schemas: Record<string, string | undefined> = {}): string {
  return folder === PLATFORM_FOLDER ? 'public' : (schemas[folder] ?? folder);
}

/**
 * Forward-only migrations of one schema. Files run in name order, each in one transaction with
 * its row in `<schema>.gatehouse_migrations`; an applied file never runs again. Before the first
 * pending file marked irreversible, the schema is dumped with pg_dump (when it holds any table):
 * no dump, no migration. An advisory lock keeps two runners from migrating the same schema at once.
 */
export async function migrateSchema(sql: Sql, opts: SchemaMigrationOptions): Promise<MigrationOutcome> {
  if (!IDENT.test(opts.schema)) throw new Error(`schema "${opts.schema}" is not a lowercase SQL identifier`);
  const files = migrationFiles(opts.dir);
  const say = opts.say ?? (() => undefined);
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(hashtext(${`gatehouse-migrate:${opts.schema}`}))`;
    await conn.unsafe(`create schema if not exists ${opts.schema}`);
    await carryLogForward(conn, opts.schema, basename(opts.dir), say);
    await conn.unsafe(`create table if not exists ${opts.schema}.gatehouse_migrations (
      name text primary key, applied_at timestamptz not null default now())`);
    const done = new Set((await conn.unsafe(`select name from ${opts.schema}.gatehouse_migrations`)).map((r) => r.name as string));
    const pending = files.filter((f) => !done.has(f));
    const outcome: MigrationOutcome = { applied: [] };
    // The platform folder runs with public alone on the path: what it creates lands there, not in a test's schema.
    const path = opts.schema === 'public' ? 'public' : `${opts.schema}, public`;
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
        await conn.unsafe(`set local search_path to ${path}`);
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

/**
 * Until the runners were one, the platform folder was logged in `public.gatehouse_migrations`
 * with a `service` column (primary key service, name). That table becomes the public schema's
 * log of the new format, keeping its rows and their times, so nothing applied runs again.
 */
async function carryLogForward(conn: Sql, schema: string, folder: string, say: (line: string) => void): Promise<void> {
  const [old] = await conn`select 1 from information_schema.columns
    where table_schema = ${schema} and table_name = 'gatehouse_migrations' and column_name = 'service'`;
  if (!old) return;
  await conn.unsafe('begin');
  try {
    const others = await conn.unsafe(`select distinct service from ${schema}.gatehouse_migrations where service <> $1`, [folder]);
    if (others.length) {
      throw new Error(
        `${schema}.gatehouse_migrations (old format) also lists files of ${others.map((r) => r.service).join(', ')}, which the old runner applied in ${schema}; ` +
          `move those rows out by hand, then migrate again`,
      );
    }
    await conn.unsafe(`alter table ${schema}.gatehouse_migrations drop column service, add primary key (name)`);
    await conn.unsafe('commit');
  } catch (err) {
    await conn.unsafe('rollback').catch(() => undefined);
    throw err;
  }
  say(`carried ${schema}.gatehouse_migrations forward to one row per file`);
}

export interface DatabaseMigrationOptions {
  /** Schema per folder (e.g. `{ chat: 'chat_t1' }`); unnamed folders use their own name, platform public. */
  schemas?: Record<string, string | undefined>;
  /** Only these folders (platform is always first when named); default every folder. */
  folders?: string[];
  /** Default infra/migrations. */
  root?: string;
  databaseUrl?: string;
  backupDir?: string;
  say?: (line: string) => void;
}

export interface FolderOutcome extends MigrationOutcome {
  folder: string;
  schema: string;
}

/** Every folder (or the ones named), each into its schema, platform first. */
export async function migrateDatabase(sql: Sql, opts: DatabaseMigrationOptions = {}): Promise<FolderOutcome[]> {
  const root = opts.root ?? MIGRATIONS_DIR;
  const folders = migrationFolders(root).filter((f) => !opts.folders || opts.folders.includes(f));
  const out: FolderOutcome[] = [];
  for (const folder of folders) {
    const schema = schemaOf(folder, opts.schemas);
    const r = await migrateSchema(sql, { dir: join(root, folder), schema, databaseUrl: opts.databaseUrl, backupDir: opts.backupDir, say: opts.say });
    out.push({ folder, schema, ...r });
  }
  return out;
}

/** Files of `dir` not yet in `<schema>.gatehouse_migrations` (all of them when the schema has no log). */
export async function pendingMigrations(sql: Sql, opts: { dir: string; schema: string }): Promise<string[]> {
  if (!IDENT.test(opts.schema)) throw new Error(`schema "${opts.schema}" is not a lowercase SQL identifier`);
  const files = migrationFiles(opts.dir);
  const [log] = await sql`select to_regclass(${`${opts.schema}.gatehouse_migrations`}) is not null as present`;
  if (!log!.present) return files;
  const done = new Set((await sql.unsafe(`select name from ${opts.schema}.gatehouse_migrations`)).map((r) => r.name as string));
  return files.filter((f) => !done.has(f));
}

/** A worker's schema is behind infra/migrations: the message says what to run. */
export class SchemaNotMigratedError extends Error {
  constructor(
    readonly folder: string,
    readonly schema: string,
    readonly pending: string[],
  ) {
    const env = folder === PLATFORM_FOLDER ? '' : ` ${folder.toUpperCase()}_SCHEMA=${schema}`;
    super(
      `schema ${schema} lacks ${pending.length} migration(s) of infra/migrations/${folder} (${pending.join(', ')}). ` +
        `Workers do not migrate: run the migrations first — scripts/start does, under docker compose the migrate service does, ` +
        `by hand: DATABASE_URL=…${env} node --import tsx scripts/src/migrate.ts`,
    );
    this.name = 'SchemaNotMigratedError';
  }
}

/**
 * What a worker does at start instead of migrating: throw SchemaNotMigratedError unless its
 * folder, and the platform folder it builds on, are applied up to the last file.
 */
export async function requireMigrated(sql: Sql, opts: { folder: string; schema: string; root?: string }): Promise<void> {
  const root = opts.root ?? MIGRATIONS_DIR;
  for (const [folder, schema] of [
    [PLATFORM_FOLDER, 'public'],
    [opts.folder, opts.schema],
  ] as const) {
    const pending = await pendingMigrations(sql, { dir: join(root, folder), schema });
    if (pending.length) throw new SchemaNotMigratedError(folder, schema, pending);
  }
}

/** pg_dump of one schema, or undefined when it has no table besides the migration log. */
async function backupSchema(conn: Sql, opts: SchemaMigrationOptions, before: string): Promise<string | undefined> {
  const [counted] = await conn<{ n: number }[]>`select count(*)::int as n from pg_tables
    where schemaname = ${opts.schema} and tablename <> 'gatehouse_migrations'`;
  if (counted!.n === 0) return undefined;
  if (!opts.databaseUrl || !opts.backupDir) throw new Error(`${before} is irreversible: migrating schema ${opts.schema} needs a databaseUrl and backupDir for its pg_dump`);
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
