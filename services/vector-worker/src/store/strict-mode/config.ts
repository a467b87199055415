/**
 * Qdrant's strict mode configuration (`strict_mode_config`, checked only while `enabled` is
 * true), how a PATCH merges into it, and the limit check every other check words its errors with.
 */
import type { CollectionMeta } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';

/** Qdrant's StrictModeConfig (all optional; only `enabled: true` turns the checks on). */
export type StrictModeConfig = {
  enabled?: boolean;
  max_query_limit?: number;
  max_timeout?: number;
  unindexed_filtering_retrieve?: boolean;
  unindexed_filtering_update?: boolean;
  search_max_hnsw_ef?: number;
  search_allow_exact?: boolean;
  search_max_oversampling?: number;
  upsert_max_batchsize?: number;
  search_max_batchsize?: number;
  max_collection_vector_size_bytes?: number;
  max_collection_payload_size_bytes?: number;
  max_points_count?: number;
  read_rate_limit?: number;
  write_rate_limit?: number;
  filter_max_conditions?: number;
  condition_max_size?: number;
  max_payload_index_count?: number;
  multivector_config?: Record<string, { max_vectors?: number | null }>;
  sparse_config?: Record<string, { max_length?: number | null }>;
};

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * PATCH semantics: the diff's keys replace the stored ones, `null` leaves a key as it was (Qdrant
 * cannot unset a limit this way), nested maps (`multivector_config`, `sparse_config`) merge by name.
 */
export function mergeStrictMode(current: unknown, diff: unknown): StrictModeConfig {
  const out: Record<string, unknown> = isObj(current) ? { ...current } : {};
  if (!isObj(diff)) return out as StrictModeConfig;
  for (const [k, v] of Object.entries(diff)) {
    if (v === null || v === undefined) continue;
    if ((k === 'multivector_config' || k === 'sparse_config') && isObj(v)) {
      const merged: Record<string, unknown> = isObj(out[k]) ? { ...(out[k] as object) } : {};
      for (const [name, cfg] of Object.entries(v)) {
        if (isObj(cfg)) merged[name] = { ...(isObj(merged[name]) ? merged[name] : {}), ...dropNulls(cfg) };
      }
      out[k] = merged;
    } else out[k] = v;
  }
  return out as StrictModeConfig;
}

function dropNulls(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));
}

/** The collection's strict mode when enabled, else null (every check passes). */
export function activeStrictMode(meta: CollectionMeta): StrictModeConfig | null {
  const c = meta.config.strict_mode_config as StrictModeConfig | undefined;
  return c?.enabled === true ? c : null;
}

/** `CollectionError::strict_mode(error, solution)` → 400 `Bad request: <error>. Help: <solution>`. */
export const strictError = (error: string, help: string) => new QdrantError(400, `Bad request: ${error}. Help: ${help}`);

/** Qdrant's `check_limit_opt`. */
export function checkLimit(value: number | undefined, limit: number | undefined, name: string): void {
  if (value === undefined || limit === undefined || limit === null) return;
  if (value > limit) throw strictError(`Limit exceeded ${value} > ${limit} for "${name}"`, `Reduce the "${name}" parameter to or below ${limit}.`);
}

/** `?timeout=` against `max_timeout` (any operation that takes one). */
export function checkTimeout(meta: CollectionMeta, timeout: number | undefined): void {
  const c = activeStrictMode(meta);
  if (c) checkLimit(timeout, c.max_timeout, 'timeout');
}
