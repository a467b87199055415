/**
 * What `GET /collections/{name}` reports beyond the stored config: configuration `warnings`, the
 * `update_queue` (writes are applied in their request's transaction, so nothing ever waits in a
 * queue), and which vectors count as indexed.
 */
import type { QdrantVectorParamsOutput } from '@gatehouse/contracts';
import { vectorParamsOf, type CollectionMeta, type Db, type DenseVector } from './catalog.ts';

export type CollectionWarning = { message: string };

/** Settings that are accepted but do nothing as configured (Qdrant reports them the same way). */
export function collectionWarnings(meta: CollectionMeta): CollectionWarning[] {
  const warnings: CollectionWarning[] = [];
  for (const [name, p] of Object.entries(vectorParamsOf(meta.config))) {
    const hnsw = (p.hnsw_config ?? {}) as { inline_storage?: boolean };
    const inline = hnsw.inline_storage ?? (meta.config.hnsw_config as { inline_storage?: boolean }).inline_storage;
    if (inline !== true) continue;
    const label = name === '' ? 'the vector' : `vector '${name}'`;
    if ((p as QdrantVectorParamsOutput).multivector_config) {
      warnings.push({ message: `HNSW inline storage is not supported for multivectors: it is ignored for ${label}` });
    } else if (!p.quantization_config && !meta.config.quantization_config) {
      warnings.push({ message: `HNSW inline storage requires quantization: it is ignored for ${label}` });
    }
  }
  return warnings;
}

/** Bytes per element of a dense vector's datatype. */
const ELEMENT_BYTES: Record<string, number> = { float32: 4, float16: 2, uint8: 1 };

/**
 * Whether a vector's points count as indexed: Qdrant indexes a segment's vectors once they exceed
 * `optimizer_config.indexing_threshold` KB (0 disables indexing). The HNSW index here exists from
 * the start; what is reported follows Qdrant's rule so clients see the same numbers.
 */
export function countsAsIndexed(meta: CollectionMeta, d: DenseVector, stored: number): boolean {
  const threshold = meta.config.optimizer_config.indexing_threshold ?? 10_000;
  if (threshold === 0) return false;
  const datatype = vectorParamsOf(meta.config)[d.name]?.datatype ?? 'float32';
  return (stored * d.size * (ELEMENT_BYTES[datatype] ?? 4)) / 1024 >= threshold;
}

/**
 * `GET …/optimizations`: there is no background optimizer (indexes are maintained by Postgres as
 * rows are written), so nothing runs or waits; the point table is reported as one idle segment,
 * with a stable id derived from the collection's.
 */
export function optimizations(meta: CollectionMeta, points: number, withFields: string | undefined) {
  const wanted = new Set((withFields ?? '').split(',').map((s) => s.trim()).filter(Boolean));
  const segment = { uuid: `00000000-0000-4000-8000-${meta.id.toString(16).padStart(12, '0')}`, points_count: points };
  return {
    summary: { queued_optimizations: 0, queued_segments: 0, queued_points: 0, idle_segments: 1 },
    running: [],
    ...(wanted.has('queued') ? { queued: [] } : {}),
    ...(wanted.has('completed') ? { completed: [] } : {}),
    ...(wanted.has('idle_segments') ? { idle_segments: [segment] } : {}),
  };
}

/** Operations applied to the collection so far (the update queue's `op_num`): its sequence's count. */
export async function appliedOperations(db: Db, schema: string, meta: CollectionMeta): Promise<number> {
  const [row] = await db<{ last: string; called: boolean }[]>`
    select last_value::text as last, is_called as called from ${db(schema)}.${db(meta.sequence)}`;
  return row?.called ? Number(row.last) + 1 : 0;
}
