import type protobuf from 'protobufjs';
import { protoEnum, protoType } from './qdrant-proto.ts';
import { enumToRest, type Msg } from './to-rest.ts';

/**
 * The worker's REST JSON (Qdrant's `result`) → the gRPC message of `typeName`, the mirror of
 * to-rest.ts: same-named fields are copied along the declared types, and the messages whose
 * shape differs (ids, payload values, vectors, collection config unions, index params) have a
 * translator below. A field REST does not send stays unset.
 */
export function fromRest(typeName: string, json: unknown): unknown {
  if (json === undefined || json === null) return undefined;
  const special = FROM_REST[typeName];
  if (special) return special(json);
  if (typeof json !== 'object' || Array.isArray(json)) return undefined;
  return walk(protoType(typeName), json as Msg);
}

function walk(type: protobuf.Type, json: Msg): Msg {
  const out: Msg = {};
  for (const field of type.fieldsArray) {
    const v = convertField(field, json[field.name]);
    if (v !== undefined) out[field.name] = v;
  }
  return out;
}

const fullName = (t: protobuf.ReflectionObject): string => t.fullName.replace(/^\./, '');

function convertField(field: protobuf.Field, v: unknown): unknown {
  if (v === undefined || v === null) return undefined;
  const rt = field.resolvedType;
  const one = (x: unknown): unknown => {
    // protobufjs reads a BigInt as 0: a u64 beyond 2^53 goes over as its decimal string.
    if (!rt) return typeof x === 'bigint' ? x.toString() : x;
    if ('fieldsArray' in rt) return fromRest(fullName(rt), x);
    return enumFromRest(rt as protobuf.Enum, x);
  };
  if (field.map) {
    if (typeof v !== 'object') return undefined;
    const out: Msg = {};
    for (const [k, x] of Object.entries(v as Msg)) {
      const c = one(x);
      if (c !== undefined) out[k] = c;
    }
    return out;
  }
  if (field.repeated) return Array.isArray(v) ? v.map(one) : undefined;
  return one(v);
}

/** REST's spelling of an enum value → the proto value name (`"green"` → `Green`, `"Cosine"` → `Cosine`). */
export function enumFromRest(e: protobuf.Enum, v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const name = fullName(e);
  for (const candidate of Object.keys(e.values)) {
    if (candidate === v || enumToRest(name, candidate) === v) return candidate;
  }
  return undefined;
}

function enumOf(fullEnumName: string, v: unknown): string | undefined {
  return enumFromRest(protoEnum(fullEnumName), v);
}

export function pointId(id: unknown): Msg {
  if (typeof id === 'bigint') return { num: id.toString() };
  return typeof id === 'number' ? { num: id } : { uuid: String(id) };
}

export function value(v: unknown): Msg {
  if (v === null || v === undefined) return { null_value: 'NULL_VALUE' };
  switch (typeof v) {
    case 'number':
      return Number.isInteger(v) ? { integer_value: v } : { double_value: v };
    case 'bigint':
      // int64 holds up to 2^63-1; beyond that only a double can carry it (as Qdrant's own gRPC does).
      return v <= 9223372036854775807n && v >= -9223372036854775808n ? { integer_value: v.toString() } : { double_value: Number(v) };
    case 'string':
      return { string_value: v };
    case 'boolean':
      return { bool_value: v };
    case 'object':
      if (Array.isArray(v)) return { list_value: { values: v.map(value) } };
      return { struct_value: { fields: payload(v) } };
    default:
      return { null_value: 'NULL_VALUE' };
  }
}

/** A JSON object → `map<string, Value>`. */
export function payload(json: unknown): Record<string, Msg> {
  const out: Record<string, Msg> = {};
  if (json && typeof json === 'object') for (const [k, v] of Object.entries(json as Msg)) out[k] = value(v);
  return out;
}

/** One REST vector (dense, sparse `{indices, values}` or multi-dense) → `VectorOutput`. */
function vectorOutput(v: unknown): Msg {
  if (Array.isArray(v)) {
    if (v.length > 0 && Array.isArray(v[0])) return { multi_dense: { vectors: (v as number[][]).map((d) => ({ data: d })) } };
    return { dense: { data: v } };
  }
  const s = v as { indices?: number[]; values?: number[] };
  return { sparse: { indices: s.indices ?? [], values: s.values ?? [] } };
}

/**
 * REST's `vector` of a point → `VectorsOutput`: an array is the unnamed vector; an object is
 * named vectors — unless it is itself a sparse vector (only possible unnamed… which Qdrant does
 * not allow, so an object is always named).
 */
function vectorsOutput(v: unknown): Msg | undefined {
  if (v === null || v === undefined) return undefined;
  if (Array.isArray(v)) return { vector: vectorOutput(v) };
  const named: Msg = {};
  for (const [k, x] of Object.entries(v as Msg)) named[k] = vectorOutput(x);
  return { vectors: { vectors: named } };
}

function orderValue(v: unknown): Msg | undefined {
  if (typeof v === 'bigint') return { int: v.toString() };
  if (typeof v !== 'number') return undefined;
  return Number.isInteger(v) ? { int: v } : { float: v };
}

function shardKey(v: unknown): Msg | undefined {
  if (typeof v === 'number') return { number: v };
  if (typeof v === 'string') return { keyword: v };
  return undefined;
}

function point(typeName: 'qdrant.ScoredPoint' | 'qdrant.RetrievedPoint') {
  return (json: unknown): Msg => {
    const p = json as Msg;
    const out: Msg = { id: pointId(p.id), payload: payload(p.payload) };
    if (typeName === 'qdrant.ScoredPoint') {
      out.score = p.score ?? 0;
      out.version = p.version ?? 0;
    }
    const vectors = vectorsOutput(p.vector);
    if (vectors) out.vectors = vectors;
    const ov = orderValue(p.order_value);
    if (ov) out.order_value = ov;
    const sk = shardKey(p.shard_key);
    if (sk) out.shard_key = sk;
    return out;
  };
}

function timestamp(v: unknown): Msg | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') return undefined;
  // Qdrant's REST times have no zone (`2026-11-27T10:00:00`): they are UTC.
  const s = typeof v === 'string' && !/[zZ]|[+-]\d\d:?\d\d$/.test(v) ? `${v}Z` : v;
  const ms = new Date(s).getTime();
  if (!Number.isFinite(ms)) return undefined;
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

function vectorsConfig(v: unknown): Msg | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Msg;
  if ('size' in o || 'distance' in o) return { params: fromRest('qdrant.VectorParams', o) };
  const map: Msg = {};
  for (const [k, x] of Object.entries(o)) map[k] = fromRest('qdrant.VectorParams', x);
  return { params_map: { map } };
}

function sparseVectorConfig(v: unknown): Msg | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const map: Msg = {};
  for (const [k, x] of Object.entries(v as Msg)) map[k] = fromRest('qdrant.SparseVectorParams', x ?? {});
  return { map };
}

function collectionParams(json: unknown): Msg {
  const p = json as Msg;
  const out = walk(protoType('qdrant.CollectionParams'), p);
  const vc = vectorsConfig(p.vectors);
  if (vc) out.vectors_config = vc;
  const sc = sparseVectorConfig(p.sparse_vectors);
  if (sc) out.sparse_vectors_config = sc;
  return out;
}

const INDEX_PARAMS: Record<string, string> = {
  keyword: 'keyword_index_params',
  integer: 'integer_index_params',
  float: 'float_index_params',
  geo: 'geo_index_params',
  text: 'text_index_params',
  bool: 'bool_index_params',
  datetime: 'datetime_index_params',
  uuid: 'uuid_index_params',
};

function payloadIndexParams(json: unknown): Msg | undefined {
  const p = json as Msg;
  const field = typeof p?.type === 'string' ? INDEX_PARAMS[p.type] : undefined;
  if (!field) return undefined;
  const type = protoType('qdrant.PayloadIndexParams').fields[field]!.type;
  return { [field]: fromRest(`qdrant.${type}`, p) };
}

function groupId(v: unknown): Msg {
  if (typeof v === 'bigint') return v >= 0n ? { unsigned_value: v.toString() } : { integer_value: v.toString() };
  if (typeof v === 'number') return v >= 0 ? { unsigned_value: v } : { integer_value: v };
  return { string_value: String(v) };
}

function facetValue(v: unknown): Msg {
  if (typeof v === 'boolean') return { bool_value: v };
  if (typeof v === 'number') return { integer_value: v };
  if (typeof v === 'bigint') return { integer_value: v.toString() };
  return { string_value: String(v) };
}

const FROM_REST: Record<string, (json: unknown) => unknown> = {
  'qdrant.PointId': pointId,
  'qdrant.Value': value,
  'qdrant.Struct': (j) => ({ fields: payload(j) }),
  'qdrant.ScoredPoint': point('qdrant.ScoredPoint'),
  'qdrant.RetrievedPoint': point('qdrant.RetrievedPoint'),
  'qdrant.VectorsOutput': vectorsOutput,
  'qdrant.OrderValue': orderValue,
  'qdrant.ShardKey': shardKey,
  'qdrant.GroupId': groupId,
  'qdrant.FacetValue': facetValue,
  'google.protobuf.Timestamp': timestamp,
  'qdrant.VectorsConfig': vectorsConfig,
  'qdrant.SparseVectorConfig': sparseVectorConfig,
  'qdrant.CollectionParams': collectionParams,
  'qdrant.PayloadIndexParams': payloadIndexParams,
  'qdrant.OptimizerStatus': (j) => (j === 'ok' ? { ok: true } : { ok: false, error: String((j as Msg).error ?? j) }),
  'qdrant.MaxOptimizationThreads': (j) => (typeof j === 'number' ? { value: j } : { setting: 'Auto' }),
  // REST's `max_optimization_threads: null` means "auto"; a null field is otherwise left unset.
  'qdrant.OptimizersConfigDiff': (j) => {
    const o = j as Msg;
    const out = walk(protoType('qdrant.OptimizersConfigDiff'), o);
    if ('max_optimization_threads' in o && o.max_optimization_threads === null) out.max_optimization_threads = { setting: 'Auto' };
    return out;
  },
  'qdrant.QuantizationConfig': (j) => (j && typeof j === 'object' ? walk(protoType('qdrant.QuantizationConfig'), j as Msg) : undefined),
  'qdrant.BinaryQuantizationQueryEncoding': (j) => {
    const setting = enumOf('qdrant.BinaryQuantizationQueryEncoding.Setting', j);
    return setting ? { setting } : undefined;
  },
};
