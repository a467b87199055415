import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { DEFAULT_DATABASE_URL } from '@gatehouse/common';

/**
 * Forward-only migrations: `infra/migrations/<owning service>/NNNN_name.sql`, applied in order,
 * each in its own transaction together with its row in `gatehouse_migrations`. A file that was
 * applied is never run again; there are no down migrations.
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
    for (const service of services) {
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
