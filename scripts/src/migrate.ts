import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { z } from 'zod';
import { DEFAULT_DATABASE_URL, migrateDatabase, parseEnv } from '@gatehouse/common';

/**
 * Applies every folder of infra/migrations, each in its schema, through the one runner
 * (services/common/src/db/migrations.ts; docs/migrations.md). scripts/start and scripts/test run
 * it before the stack, and the compose `migrate` service before the edge and workers, which only
 * check that their schema is current.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What this script reads (the compose `migrate` service is checked against it). */
export const MigrateEnv = z.object({
  DATABASE_URL: z.string().default(DEFAULT_DATABASE_URL),
  /** Where a pg_dump of a schema goes before an irreversible migration. */
  GATEHOUSE_BACKUP_DIR: z.string().default(join(root, '.state', 'backups')),
  /** The schemas the chat and vector workers use (the same variables they read). */
  CHAT_SCHEMA: z.string().optional(),
  VECTOR_SCHEMA: z.string().optional(),
});

/** Migrate the database at `databaseUrl`; returns `<schema>/<file>` for each file applied. */
export async function migrate(databaseUrl: string, env: z.infer<typeof MigrateEnv> = MigrateEnv.parse({})): Promise<string[]> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  try {
    const out = await migrateDatabase(sql, {
      schemas: { chat: env.CHAT_SCHEMA, vector: env.VECTOR_SCHEMA },
      databaseUrl,
      backupDir: env.GATEHOUSE_BACKUP_DIR,
      say: (line) => process.stderr.write(`[migrate] ${line}\n`),
    });
    return out.flatMap((o) => o.applied.map((f) => `${o.schema}/${f}`));
  } finally {
    await sql.end({ timeout: 5 });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const env = parseEnv(MigrateEnv);
  const masked = env.DATABASE_URL.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  migrate(env.DATABASE_URL, env).then(
    (applied) => process.stderr.write(`[migrate] ${masked}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`),
    (err: Error) => {
      process.stderr.write(`[migrate] ${masked}: ${err.message}\n`);
      process.exit(1);
    },
  );
}
