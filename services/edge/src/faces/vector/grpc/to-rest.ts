import type protobuf from 'protobufjs';
import { protoType } from './qdrant-proto.ts';

/**
 * A gRPC message (as decoded, see MESSAGE_FORM) → the JSON Qdrant's REST API takes for the same
 * thing, so the worker serves both ports from one body format. The walk follows the declared
 * types: a message with the same shape in both APIs (configs, search params, ranges, geo…) is
 * copied field by field; the ones that differ (ids, payload values, vectors, selectors, filter
 * conditions, queries) have a translator below, keyed by the message's full name.
 */
export type Msg = Record<string, unknown>;

/** A request the client got wrong in a way REST could not express: INVALID_ARGUMENT. */
export class InvalidArgument extends Error {}

type ToRest = (m: Msg) => unknown;

/** Enum value names REST spells differently from `snake_case(name)`. */
const ENUM_TO_REST: Record<string, (name: string) => string | undefined> = {
  // REST keeps the distance's proto spelling: "Cosine".
  'qdrant.Distance': (n) => (n === 'UnknownDistance' ? undefined : n),
  'qdrant.FieldType': (n) => n.replace(/^FieldType/, '').toLowerCase(),
  // The zero value means "not set" for these: REST leaves the field out.
  'qdrant.Datatype': (n) => (n === 'Default' ? undefined : snake(n)),
  'qdrant.Memory': (n) => (n === 'MemoryUnknown' ? undefined : snake(n)),
  'qdrant.TokenizerType': (n) => (n === 'Unknown' ? undefined : snake(n)),
  'qdrant.QuantizationType': (n) => (n === 'UnknownQuantization' ? undefined : snake(n)),
};

/** `AverageVector` → `average_vector`, `RRF` → `rrf`, `Float32` → `float32`. */
export function snake(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

export function enumToRest(enumName: string, value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const special = ENUM_TO_REST[enumName];
  return special ? special(value) : snake(value);
}

/** The message `m` of type `typeName` as REST JSON. */
export function toRest(typeName: string, m: unknown): unknown {
  if (m === undefined || m === null) return undefined;
  const special = TO_REST[typeName];
  if (special) return special(m as Msg);
  return walk(protoType(typeName), m as Msg);
}

/** Field by field, same names; empty repeated fields are left out (Qdrant's gRPC reads them as unset). */
function walk(type: protobuf.Type, m: Msg, skip: readonly string[] = []): Msg {
  const out: Msg = {};
  for (const field of type.fieldsArray) {
    if (skip.includes(field.name)) continue;
    const v = convertField(field, m[field.name]);
    if (v !== undefined) out[field.name] = v;
  }
  return out;
}

const LONG_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/** A 64-bit integer as decoded (a decimal string, see MESSAGE_FORM) → REST's exact JSON integer. */
export function exactInt(x: unknown): unknown {
  if (typeof x !== 'string' || !/^-?\d+$/.test(x)) return x;
  const n = Number(x);
  return Number.isSafeInteger(n) ? n : BigInt(x);
}

function convertField(field: protobuf.Field, v: unknown): unknown {
  if (v === undefined || v === null) return undefined;
  const rt = field.resolvedType;
  const one = (x: unknown): unknown => {
    if (!rt) return LONG_TYPES.has(field.type) ? exactInt(x) : x;
    if ('fieldsArray' in rt) return toRest(fullName(rt), x);
    return enumToRest(fullName(rt), x);
  };
  if (field.map) {
    const out: Msg = {};
    for (const [k, x] of Object.entries(v as Msg)) out[k] = one(x);
    return out;
  }
  if (field.repeated) {
    const list = v as unknown[];
    if (list.length === 0) return undefined;
    return list.map(one);
  }
  return one(v);
}

const fullName = (t: protobuf.ReflectionObject): string => t.fullName.replace(/^\./, '');

/** The fields of `m` (of `typeName`) except `skip`, as REST JSON: for request bodies. */
export function restFields(typeName: string, m: Msg, skip: readonly string[]): Msg {
  return walk(protoType(typeName), m, skip);
}

function pointId(m: Msg): unknown {
  if (typeof m.num === 'string' || typeof m.num === 'number') return exactInt(m.num);
  if (typeof m.uuid === 'string') return m.uuid;
  throw new InvalidArgument('Unable to parse point id: neither num nor uuid is set');
}

function value(m: Msg): unknown {
  if ('null_value' in m) return null;
  if ('double_value' in m) return m.double_value;
  if ('integer_value' in m) return exactInt(m.integer_value);
  if ('string_value' in m) return m.string_value;
  if ('bool_value' in m) return m.bool_value;
  if ('struct_value' in m) return struct(m.struct_value as Msg);
  if ('list_value' in m) return ((m.list_value as Msg).values as Msg[] | undefined ?? []).map(value);
  // An empty Value is how protobuf writes JSON null when the kind is left unset.
  return null;
}

function struct(m: Msg | undefined): Msg {
  const out: Msg = {};
  for (const [k, v] of Object.entries((m?.fields as Record<string, Msg> | undefined) ?? {})) out[k] = value(v);
  return out;
}

/** `map<string, Value>` (payloads, metadata) → a JSON object. */
export function payload(m: unknown): Msg {
  const out: Msg = {};
  for (const [k, v] of Object.entries((m as Record<string, Msg> | undefined) ?? {})) out[k] = value(v);
  return out;
}

const dense = (m: Msg): number[] => (m.data as number[] | undefined) ?? [];
const sparse = (m: Msg) => ({ indices: (m.indices as number[] | undefined) ?? [], values: (m.values as number[] | undefined) ?? [] });
const multi = (m: Msg): number[][] => ((m.vectors as Msg[] | undefined) ?? []).map(dense);
const doc = (m: Msg) => ({ text: m.text ?? '', model: m.model ?? '', ...(m.options ? { options: payload(m.options) } : {}) });

/** `Vector`: the `vector` oneof, or the deprecated `data` (+ `indices` for sparse, `vectors_count` for multi). */
function vector(m: Msg): unknown {
  if (m.dense) return dense(m.dense as Msg);
  if (m.sparse) return sparse(m.sparse as Msg);
  if (m.multi_dense) return multi(m.multi_dense as Msg);
  if (m.document) return doc(m.document as Msg);
  if (m.image) return toRest('qdrant.Image', m.image);
  if (m.object) return toRest('qdrant.InferenceObject', m.object);
  const data = (m.data as number[] | undefined) ?? [];
  if (m.indices) return { indices: ((m.indices as Msg).data as number[] | undefined) ?? [], values: data };
  const count = m.vectors_count as number | undefined;
  if (count && count > 0) {
    if (data.length % count !== 0) throw new InvalidArgument(`Malformed multi vector: ${data.length} values do not split into ${count} vectors`);
    const dim = data.length / count;
    return Array.from({ length: count }, (_, i) => data.slice(i * dim, (i + 1) * dim));
  }
  return data;
}

function namedVectors(m: Msg): Msg {
  const out: Msg = {};
  for (const [k, v] of Object.entries((m.vectors as Record<string, Msg> | undefined) ?? {})) out[k] = vector(v);
  return out;
}

function vectors(m: Msg): unknown {
  if (m.vector) return vector(m.vector as Msg);
  if (m.vectors) return namedVectors(m.vectors as Msg);
  // Qdrant accepts a point with no vectors (all named vectors optional): an empty map.
  return {};
}

function vectorInput(m: Msg): unknown {
  if (m.id) return pointId(m.id as Msg);
  if (m.dense) return dense(m.dense as Msg);
  if (m.sparse) return sparse(m.sparse as Msg);
  if (m.multi_dense) return multi(m.multi_dense as Msg);
  if (m.document) return doc(m.document as Msg);
  if (m.image) return toRest('qdrant.Image', m.image);
  if (m.object) return toRest('qdrant.InferenceObject', m.object);
  throw new InvalidArgument('VectorInput is empty');
}

/** `PointsSelector` → the REST fields it stands for: `{points: [ids]}` or `{filter}`. */
export function pointsSelector(m: unknown): Msg {
  const s = (m ?? {}) as Msg;
  if (s.points) return { points: ((s.points as Msg).ids as Msg[] | undefined ?? []).map(pointId) };
  if (s.filter) return { filter: toRest('qdrant.Filter', s.filter) };
  return {};
}

function withPayload(m: Msg): unknown {
  if ('enable' in m) return m.enable;
  if (m.include) return { include: (m.include as Msg).fields ?? [] };
  if (m.exclude) return { exclude: (m.exclude as Msg).fields ?? [] };
  return undefined;
}

function withVectors(m: Msg): unknown {
  if ('enable' in m) return m.enable;
  if (m.include) return (m.include as Msg).names ?? [];
  return undefined;
}

function timestamp(m: Msg): string {
  const ms = Number(m.seconds ?? 0) * 1000 + Math.floor(Number(m.nanos ?? 0) / 1e6);
  return new Date(ms).toISOString();
}

function filter(m: Msg): Msg {
  const out: Msg = {};
  for (const k of ['should', 'must', 'must_not'] as const) {
    const list = m[k] as Msg[] | undefined;
    if (list?.length) out[k] = list.map(condition);
  }
  if (m.min_should) {
    const ms = m.min_should as Msg;
    out.min_should = { conditions: ((ms.conditions as Msg[] | undefined) ?? []).map(condition), min_count: exactInt(ms.min_count ?? 0) };
  }
  return out;
}

function condition(m: Msg): unknown {
  if (m.field) return fieldCondition(m.field as Msg);
  if (m.is_empty) return { is_empty: { key: (m.is_empty as Msg).key ?? '' } };
  if (m.is_null) return { is_null: { key: (m.is_null as Msg).key ?? '' } };
  if (m.has_id) return { has_id: (((m.has_id as Msg).has_id as Msg[] | undefined) ?? []).map(pointId) };
  if (m.filter) return filter(m.filter as Msg);
  if (m.nested) {
    const n = m.nested as Msg;
    return { nested: { key: n.key ?? '', filter: filter((n.filter as Msg | undefined) ?? {}) } };
  }
  if (m.has_vector) return { has_vector: (m.has_vector as Msg).has_vector ?? '' };
  if (m.slice) return { slice: walk(protoType('qdrant.SliceCondition'), m.slice as Msg) };
  throw new InvalidArgument('Condition is empty');
}

function fieldCondition(m: Msg): Msg {
  const out = walk(protoType('qdrant.FieldCondition'), m, ['match', 'datetime_range']);
  out.key = m.key ?? '';
  if (m.match) out.match = match(m.match as Msg);
  if (m.datetime_range) {
    const r: Msg = {};
    for (const [k, t] of Object.entries(m.datetime_range as Record<string, Msg>)) r[k] = timestamp(t);
    out.range = r;
  }
  return out;
}

function match(m: Msg): Msg {
  if ('keyword' in m) return { value: m.keyword };
  if ('integer' in m) return { value: exactInt(m.integer) };
  if ('boolean' in m) return { value: m.boolean };
  if ('text' in m) return { text: m.text };
  if ('phrase' in m) return { phrase: m.phrase };
  if ('text_any' in m) return { text_any: m.text_any };
  if ('prefix' in m) return { prefix: m.prefix };
  if (m.keywords) return { any: (m.keywords as Msg).strings ?? [] };
  if (m.integers) return { any: ((m.integers as Msg).integers as unknown[] | undefined ?? []).map(exactInt) };
  if (m.except_keywords) return { except: (m.except_keywords as Msg).strings ?? [] };
  if (m.except_integers) return { except: ((m.except_integers as Msg).integers as unknown[] | undefined ?? []).map(exactInt) };
  throw new InvalidArgument('Match is empty');
}

function startFrom(m: Msg): unknown {
  if ('float' in m) return m.float;
  if ('integer' in m) return exactInt(m.integer);
  if (m.timestamp) return timestamp(m.timestamp as Msg);
  if ('datetime' in m) return m.datetime;
  return undefined;
}

function query(m: Msg): unknown {
  if (m.nearest) return { nearest: vectorInput(m.nearest as Msg) };
  if (m.nearest_with_mmr) {
    const n = m.nearest_with_mmr as Msg;
    return { nearest: vectorInput((n.nearest as Msg | undefined) ?? {}), mmr: toRest('qdrant.Mmr', n.mmr ?? {}) };
  }
  if ('fusion' in m) return { fusion: enumToRest('qdrant.Fusion', m.fusion) };
  if ('sample' in m) return { sample: enumToRest('qdrant.Sample', m.sample) };
  if (m.recommend) return { recommend: toRest('qdrant.RecommendInput', m.recommend) };
  if (m.discover) return { discover: toRest('qdrant.DiscoverInput', m.discover) };
  if (m.context) return { context: contextPairs(m.context as Msg) };
  if (m.order_by) return { order_by: toRest('qdrant.OrderBy', m.order_by) };
  if (m.formula) return { formula: toRest('qdrant.Formula', m.formula) };
  if (m.rrf) return { rrf: toRest('qdrant.Rrf', m.rrf) };
  if (m.relevance_feedback) return { relevance_feedback: toRest('qdrant.RelevanceFeedbackInput', m.relevance_feedback) };
  throw new InvalidArgument('Query is empty');
}

const contextPairs = (m: Msg): unknown[] => ((m.pairs as Msg[] | undefined) ?? []).map((p) => toRest('qdrant.ContextInputPair', p));

function shardKey(m: Msg): unknown {
  return 'keyword' in m ? m.keyword : exactInt(m.number);
}

/** `ShardKeySelector` → REST's `shard_key`: one key, a list, or `{shard_keys, fallback}`. */
function shardKeySelector(m: Msg): unknown {
  const keys = ((m.shard_keys as Msg[] | undefined) ?? []).map(shardKey);
  if (m.fallback) return { shard_keys: keys, fallback: shardKey(m.fallback as Msg) };
  return keys.length === 1 ? keys[0] : keys;
}

function payloadIndexParams(m: Msg): Msg {
  const kinds: Record<string, string> = {
    keyword_index_params: 'keyword',
    integer_index_params: 'integer',
    float_index_params: 'float',
    geo_index_params: 'geo',
    text_index_params: 'text',
    bool_index_params: 'bool',
    datetime_index_params: 'datetime',
    uuid_index_params: 'uuid',
  };
  for (const [field, type] of Object.entries(kinds)) {
    if (m[field]) return { type, ...(toRest(`qdrant.${protoType('qdrant.PayloadIndexParams').fields[field]!.type}`, m[field]) as Msg) };
  }
  throw new InvalidArgument('PayloadIndexParams is empty');
}

function mapOf(typeName: string) {
  return (m: Msg): Msg => {
    const out: Msg = {};
    for (const [k, v] of Object.entries((m.map as Msg | undefined) ?? {})) out[k] = toRest(typeName, v);
    return out;
  };
}

const TO_REST: Record<string, ToRest> = {
  'qdrant.PointId': pointId,
  'qdrant.Value': value,
  'qdrant.Struct': struct,
  'qdrant.ListValue': (m) => ((m.values as Msg[] | undefined) ?? []).map(value),
  'qdrant.Vector': vector,
  'qdrant.DenseVector': dense,
  'qdrant.SparseVector': sparse,
  'qdrant.MultiDenseVector': multi,
  'qdrant.Document': doc,
  'qdrant.NamedVectors': namedVectors,
  'qdrant.Vectors': vectors,
  'qdrant.VectorInput': vectorInput,
  'qdrant.PointStruct': (m) => ({ id: pointId((m.id as Msg | undefined) ?? {}), vector: vectors((m.vectors as Msg | undefined) ?? {}), payload: payload(m.payload) }),
  'qdrant.PointVectors': (m) => ({ id: pointId((m.id as Msg | undefined) ?? {}), vector: vectors((m.vectors as Msg | undefined) ?? {}) }),
  'qdrant.PointsSelector': pointsSelector,
  'qdrant.PointsIdsList': (m) => ((m.ids as Msg[] | undefined) ?? []).map(pointId),
  'qdrant.WithPayloadSelector': withPayload,
  'qdrant.WithVectorsSelector': withVectors,
  'qdrant.VectorsSelector': (m) => m.names ?? [],
  'qdrant.Filter': filter,
  'qdrant.Condition': condition,
  'qdrant.FieldCondition': fieldCondition,
  'qdrant.Match': match,
  'google.protobuf.Timestamp': timestamp,
  'qdrant.StartFrom': startFrom,
  'qdrant.Query': query,
  'qdrant.ContextInput': contextPairs,
  'qdrant.ShardKey': shardKey,
  'qdrant.ShardKeySelector': shardKeySelector,
  'qdrant.ReadConsistency': (m) => ('factor' in m ? m.factor : enumToRest('qdrant.ReadConsistencyType', m.type ?? 'All')),
  'qdrant.WriteOrdering': (m) => enumToRest('qdrant.WriteOrderingType', m.type ?? 'Weak'),
  'qdrant.LookupLocation': (m) => ({
    collection: m.collection_name ?? '',
    ...(m.vector_name !== undefined ? { vector: m.vector_name } : {}),
    ...(m.shard_key_selector ? { shard_key: shardKeySelector(m.shard_key_selector as Msg) } : {}),
  }),
  'qdrant.VectorExample': (m) => (m.id ? pointId(m.id as Msg) : vector((m.vector as Msg | undefined) ?? {})),
  'qdrant.TargetVector': (m) => toRest('qdrant.VectorExample', m.single ?? {}),
  'qdrant.MaxOptimizationThreads': (m) => ('value' in m ? m.value : 'auto'),
  'qdrant.BinaryQuantizationQueryEncoding': (m) => enumToRest('qdrant.BinaryQuantizationQueryEncoding.Setting', m.setting ?? 'Default'),
  'qdrant.QuantizationConfigDiff': (m) => (m.disabled ? 'Disabled' : walk(protoType('qdrant.QuantizationConfigDiff'), m)),
  'qdrant.VectorsConfig': (m) => (m.params ? toRest('qdrant.VectorParams', m.params) : mapOf('qdrant.VectorParams')((m.params_map as Msg | undefined) ?? {})),
  // REST's update takes named diffs only; the unnamed vector's name is "".
  'qdrant.VectorsConfigDiff': (m) => (m.params ? { '': toRest('qdrant.VectorParamsDiff', m.params) } : mapOf('qdrant.VectorParamsDiff')((m.params_map as Msg | undefined) ?? {})),
  'qdrant.VectorParamsMap': mapOf('qdrant.VectorParams'),
  'qdrant.VectorParamsDiffMap': mapOf('qdrant.VectorParamsDiff'),
  'qdrant.SparseVectorConfig': mapOf('qdrant.SparseVectorParams'),
  'qdrant.PayloadIndexParams': payloadIndexParams,
  'qdrant.StemmingAlgorithm': (m) => (m.snowball ? { type: 'snowball', ...(m.snowball as Msg) } : undefined),
};
