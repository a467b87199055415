import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Sql } from 'postgres';
import { MIGRATIONS_DIR, migrateDatabase, migrationFiles, PLATFORM_FOLDER } from '@gatehouse/common';

/**
 * A migrated schema, made once and copied per test stack. Running a service folder's migrations
 * costs about a second and a half of Postgres time on this machine (chat: eleven files, ~190
 * columns, ~60 indexes, functions and triggers); copying the finished schema costs a fifth of
 * that. The template is made by the real runner (migrateDatabase, the same files scripts/start
 * applies) into `tpl_<folder>_<digest of the files>`, so a changed migration makes a new one;
 * `pg_dump --schema` of it, with the template's name replaced by the stack's, is the copy. It
 * keeps everything the runner made: tables, indexes, functions with their `set search_path`,
 * triggers, and the migration log with its rows, so a worker's requireMigrated sees it migrated.
 */

const run = promisify(execFile);
/** Dumps are kept beside the other run state; a new digest is a new file. */
const DUMP_DIR = join(import.meta.dirname, '..', '..', '.state', 'schema-templates');

/** The template's schema name for `folder`: a digest of the platform's and the folder's files. */
export function templateSchema(folder: string, root = MIGRATIONS_DIR): string {
  const h = createHash('sha256');
  for (const f of [PLATFORM_FOLDER, folder]) {
    for (const file of migrationFiles(join(root, f))) h.update(`${f}/${file}\n`).update(readFileSync(join(root, f, file)));
  }
  return `tpl_${folder}_${h.digest('hex').slice(0, 12)}`;
}

/**
 * Make the template of `folder` in the database of `sql` if it is not there, and its dump if that
 * is missing; returns the dump's path. Safe from several processes at once: the runner's advisory
 * lock lets one migrate the template while the others wait and then find nothing to do, and the
 * dump is written under a temporary name and renamed.
 */
export async function ensureTemplate(sql: Sql, databaseUrl: string, folder: string): Promise<string> {
  const schema = templateSchema(folder);
  const file = join(DUMP_DIR, `${schema}.sql`);
  // A no-op on a complete template; finishes one that a killed run left half done.
  await migrateDatabase(sql, { folders: [PLATFORM_FOLDER, folder], schemas: { [folder]: schema }, databaseUrl });
  if (!existsSync(file)) {
    const { stdout } = await run('pg_dump', ['--dbname', databaseUrl, '--schema', schema, '--no-owner', '--no-privileges', '--inserts'], {
      maxBuffer: 64 << 20,
    });
    mkdirSync(DUMP_DIR, { recursive: true });
    const tmp = `${file}.${process.pid}`;
    writeFileSync(tmp, stdout);
    renameSync(tmp, file);
  }
  return file;
}

/**
 * Create `schema` as a copy of the template of `folder` (made first if missing), in one
 * transaction; nothing if another process made it first. The dump's session settings are left
 * out (they would empty the search_path of the connection); function bodies are not checked at
 * creation, as pg_restore does.
 */
export async function cloneTemplate(sql: Sql, databaseUrl: string, folder: string, schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`schema "${schema}" is not a lowercase SQL identifier`);
  const file = await ensureTemplate(sql, databaseUrl, folder);
  const template = templateSchema(folder);
  const text = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/^(SET |SELECT pg_catalog\.set_config\(|\\)/.test(line))
    .join('\n')
    .replaceAll(template, schema);
  await sql.begin(async (tx) => {
    // Two workers of one stack start side by side and both find the schema missing: the first
    // copies it under this lock, the second then finds it there and leaves it.
    await tx`select pg_advisory_xact_lock(hashtext(${`gatehouse.schema-template:${schema}`}))`;
    const [present] = await tx`select 1 from pg_namespace where nspname = ${schema}`;
    if (present) return;
    await tx.unsafe('set local check_function_bodies = false');
    await tx.unsafe(text);
  });
}
