/**
 * Named vectors added to or removed from an existing collection (Qdrant 1.19
 * `PUT|DELETE /collections/{name}/vectors/{vector}`). A dense vector is one more `v<i>` column
 * (the first free index, so a dropped and re-created name gets a fresh, empty column) with its
 * HNSW index; a sparse vector is one more entry in `params.sparse_vectors`. Deleting drops the
 * column, or removes the name from every point's `sparse` map (the trigger updates the inverted
 * index). Config and table change in one transaction, under the catalog row's lock.
 */
import type postgres from 'postgres';
import { QdrantVectorNameConfig, type QdrantUpdateResult, type QdrantVectorParams, type QdrantVectorParamsOutput } from '@gatehouse/contracts';
import { metaOf, tableOf, type CollectionMeta, type StoredConfig } from './catalog.ts';
import { checkSparseParams, columnType, createVectorIndex, vectorParamsOutput } from './collections.ts';
import { nextOperationId, parseBody, plain, updateResult, type WriteOptions } from '../common.ts';
import { notFoundCollection, wrongInput } from '../errors.ts';
import { notExistingVector } from '../vectors/vectors.ts';

type Locked = { meta: CollectionMeta; config: StoredConfig };

async function lockCollection(tx: postgres.TransactionSql, schema: string, name: string): Promise<Locked> {
  const [row] = await tx<{ id: number; name: string; config: StoredConfig }[]>`
    select id, name, config from ${tx(schema)}.collections where name = ${name} for update`;
  if (!row) throw notFoundCollection(name);
  return { meta: metaOf(row, []), config: row.config };
}

async function saveConfig(tx: postgres.TransactionSql, schema: string, name: string, config: StoredConfig): Promise<void> {
  await tx`update ${tx(schema)}.collections set config = ${tx.json(config as never)} where name = ${name}`;
}

export async function createVectorName(
  sql: postgres.Sql,
  schema: string,
  name: string,
  vector: string,
  body: unknown,
  opts: WriteOptions,
): Promise<QdrantUpdateResult> {
  const req = parseBody(QdrantVectorNameConfig, body);
  if (vector === '') throw wrongInput('Vector name cannot be empty');
  return sql.begin(async (tx) => {
    const { meta, config } = await lockCollection(tx, schema, name);
    if (meta.dense.has(vector) || meta.sparse.has(vector)) throw wrongInput(`Vector with name \`${vector}\` already exists`);
    if (!config.named && meta.dense.has('')) {
      throw wrongInput('Named vectors cannot be added to a collection with a single unnamed vector');
    }
    const op = await nextOperationId(tx, schema, meta);
    if ('dense' in req) {
      const used = new Set(Object.values(config.columns));
      let i = 0;
      while (used.has(`v${i}`)) i++; // bounded by the number of columns
      const column = `v${i}`;
      config.columns[vector] = column;
      (config.params.vectors as Record<string, QdrantVectorParamsOutput>)[vector] = vectorParamsOutput(req.dense as QdrantVectorParams);
      const updated = metaOf({ id: meta.id, name, config }, []);
      const d = updated.dense.get(vector)!;
      const table = tableOf(tx, schema, meta);
      await tx`alter table ${table} add column ${tx(column)} ${columnType(tx, d)}`;
      await createVectorIndex(tx, table, updated, d);
    } else {
      checkSparseParams(vector, req.sparse);
      config.params.sparse_vectors = { ...(config.params.sparse_vectors ?? {}), [vector]: plain(req.sparse) };
    }
    await saveConfig(tx, schema, name, config);
    return updateResult(op, opts);
  });
}

export async function deleteVectorName(
  sql: postgres.Sql,
  schema: string,
  name: string,
  vector: string,
  opts: WriteOptions,
): Promise<QdrantUpdateResult> {
  return sql.begin(async (tx) => {
    const { meta, config } = await lockCollection(tx, schema, name);
    const dense = meta.dense.get(vector);
    if (!dense && !meta.sparse.has(vector)) throw notExistingVector(vector);
    const op = await nextOperationId(tx, schema, meta);
    const table = tableOf(tx, schema, meta);
    if (dense) {
      if (!config.named) throw wrongInput('The unnamed vector of a collection cannot be deleted');
      await tx`alter table ${table} drop column ${tx(dense.column)}`;
      delete config.columns[vector];
      delete (config.params.vectors as Record<string, QdrantVectorParamsOutput>)[vector];
    } else {
      await tx`update ${table} set sparse = nullif(sparse - ${vector}::text, '{}'::jsonb) where sparse ? ${vector}`;
      delete config.params.sparse_vectors![vector];
    }
    await saveConfig(tx, schema, name, config);
    return updateResult(op, opts);
  });
}
