import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { DEFAULT_DATABASE_URL, migrateSchema } from '@gatehouse/common';

/**
 * Forward-only migrations: `infra/migrations/<owning service>/NNNN_name.sql`, applied in order,
 * each in its own transaction together with its row in a migration log. A file that was applied
 * is never run again; there are no down migrations.
 * - `platform/` (extensions) runs in the public schema, logged in `gatehouse_migrations`.
 * - every other folder belongs to a service schema (the folder's name, or `<SERVICE>_SCHEMA`)
 *   and runs through migrateSchema: its own log, and a pg_dump backup before a file marked
 *   irreversible (printed, under GATEHOUSE_BACKUP_DIR, default .state/backups).
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = join(root, 'infra', 'migrations');
const url = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;

export async function migrate(databaseUrl: string): Promise<string[]> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  const applied: string[] = [];
  try {
    await sql`create table if not exists gatehouse_migrations (
      service text not null, name text not null, applied_at timestamptz not null default now(),
      primary key (service, name))`;
    const services = existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()
      : [];
    // platform first: the service schemas need its extensions.
    services.sort((a, b) => (a === 'platform' ? -1 : b === 'platform' ? 1 : a.localeCompare(b)));
    for (const service of services) {
      if (service !== 'platform') {
        const schema = process.env[`${service.toUpperCase()}_SCHEMA`] ?? service;
        const out = await migrateSchema(sql, {
          dir: join(dir, service),
          schema,
          databaseUrl,
          backupDir: process.env.GATEHOUSE_BACKUP_DIR ?? join(root, '.state', 'backups'),
          say: (line) => process.stderr.write(`[migrate] ${line}\n`),
        });
        applied.push(...out.applied.map((f) => `${schema}/${f}`));
        continue;
      }
      const done = new Set((await sql`select name from gatehouse_migrations where service = ${service}`).map((r) => r.name as string));
      const files = readdirSync(join(dir, service)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
      for (const f of files) {
        if (done.has(f)) continue;
        const text = readFileSync(join(dir, service, f), 'utf8');
        await sql.begin(async (tx) => {
          await tx.unsafe(text);
          await tx`insert into gatehouse_migrations (service, name) values (${service}, ${f})`;
        });
        applied.push(`${service}/${f}`);
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
  return applied;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const masked = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  migrate(url).then(
    (applied) => process.stderr.write(`[migrate] ${masked}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`),
    (err: Error) => {
      process.stderr.write(`[migrate] ${masked}: ${err.message}\n`);
      process.exit(1);
    },
  );
}
