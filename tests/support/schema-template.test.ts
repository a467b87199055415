import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateDatabase, PLATFORM_FOLDER, requireMigrated } from '@gatehouse/common';
import { testDatabaseUrl } from './local-stack.ts';
import { cloneTemplate, templateSchema } from './schema-template.ts';

const url = testDatabaseUrl();
const sql = postgres(url, { max: 2, onnotice: () => undefined });
const made: string[] = [];
afterAll(async () => {
  for (const s of made) await sql.unsafe(`drop schema if exists ${s} cascade`);
  await sql.end();
});

/** Everything the runner makes in a schema, with the schema's own name written as `<s>`. */
async function shape(schema: string) {
  const norm = (rows: Record<string, unknown>[]) => rows.map((r) => JSON.stringify(r).replaceAll(schema, '<s>')).sort();
  return {
    columns: norm(
      await sql`select table_name, column_name, data_type, udt_name, column_default, is_nullable
        from information_schema.columns where table_schema = ${schema}`,
    ),
    indexes: norm(await sql`select indexname, indexdef from pg_indexes where schemaname = ${schema}`),
    constraints: norm(
      await sql`select conname, contype, pg_get_constraintdef(c.oid) as def from pg_constraint c
        join pg_namespace n on n.oid = c.connamespace where n.nspname = ${schema}`,
    ),
    functions: norm(
      await sql`select proname, prosrc, proconfig, pg_get_function_identity_arguments(p.oid) as args from pg_proc p
        join pg_namespace n on n.oid = p.pronamespace where n.nspname = ${schema}`,
    ),
    triggers: norm(
      await sql`select tgname, pg_get_triggerdef(t.oid) as def from pg_trigger t join pg_class c on c.oid = t.tgrelid
        join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema} and not t.tgisinternal`,
    ),
    log: (await sql.unsafe(`select name from ${schema}.gatehouse_migrations order by name`)).map((r) => r.name),
  };
}

describe('a schema copied from the migrated template', () => {
  for (const folder of ['chat', 'vector'] as const) {
    it(`${folder}: the same tables, indexes, constraints, functions, triggers and log as the runner makes`, { timeout: 60_000 }, async () => {
      const id = randomBytes(4).toString('hex');
      const migrated = `${folder}_mig_${id}`;
      const cloned = `${folder}_clone_${id}`;
      made.push(migrated, cloned);
      await migrateDatabase(sql, { folders: [PLATFORM_FOLDER, folder], schemas: { [folder]: migrated }, databaseUrl: url });
      await cloneTemplate(sql, url, folder, cloned);
      const [a, b] = [await shape(migrated), await shape(cloned)];
      expect(b.columns.length).toBeGreaterThan(10);
      expect(b.log.length).toBeGreaterThan(0);
      if (folder === 'chat') expect([b.functions.length, b.triggers.length]).not.toContain(0);
      expect(b).toEqual(a);
      // A worker starting on the copy finds it migrated.
      await expect(requireMigrated(sql, { folder, schema: cloned })).resolves.toBeUndefined();
    });
  }

  it('names the template after its files, so a changed migration gets a new template', () => {
    expect(templateSchema('chat')).toMatch(/^tpl_chat_[0-9a-f]{12}$/);
    expect(templateSchema('chat')).not.toBe(templateSchema('vector'));
  });
});
