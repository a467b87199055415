import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import type protobuf from 'protobufjs';
import { decodeMessage, encodeMessage, MESSAGE_FORM, protoType } from './qdrant-proto.ts';
import { RPC_TABLE } from './rpc-table.ts';
import type { Msg } from './to-rest.ts';
import { grpcStatusFor, peerAddress } from './vector-grpc.ts';

/**
 * REST → gRPC: the worker's `result` for an RPC becomes its response message, which must encode
 * (a wrong type would fail here, not in a client) and decode to what the client should read.
 */
const encoded = (rpc: string, responseType: string, result: unknown) => encodeMessage(responseType, RPC_TABLE[rpc]!.reply(result));
/** Decoded with 64-bit integers as numbers, as a client without exact ids reads them. */
const reply = (rpc: string, responseType: string, result: unknown): Msg => {
  const t = protoType(responseType);
  return t.toObject(t.decode(encoded(rpc, responseType, result)), { ...MESSAGE_FORM, longs: Number } as protobuf.IConversionOptions) as Msg;
};

describe('u64 ids beyond 2^53 in replies', () => {
  it('go out exactly (ids, scroll offset, payload integers)', () => {
    const r = decodeMessage(
      'qdrant.ScrollResponse',
      encoded('qdrant.Points/Scroll', 'qdrant.ScrollResponse', {
        points: [{ id: 424242424242424242n, payload: { n: 9007199254740993n } }],
        next_page_offset: 18446744073709551615n,
      }),
    );
    expect(r.next_page_offset).toEqual({ num: '18446744073709551615' });
    expect(r.result).toEqual([{ id: { num: '424242424242424242' }, payload: { n: { integer_value: '9007199254740993' } } }]);
  });
});

describe('points in replies', () => {
  it('scored points: ids, payload of every kind, score, version, named vectors of mixed kinds, order value', () => {
    const r = reply('qdrant.Points/Query', 'qdrant.QueryResponse', {
      points: [
        {
          id: 'f47ac10b-58cc-4372-a567-0e02b2c3d479',
          version: 3,
          score: 0.75,
          payload: { s: 'x', i: 7, d: 1.5, b: false, n: null, l: [1, 'a'], o: { k: [true] } },
          vector: { img: [0.5, 1], text: { indices: [2], values: [0.25] }, colbert: [[1], [2]] },
          order_value: 2020,
        },
        { id: 5, version: 0, score: 0.5 },
      ],
    });
    const [a, b] = r.result as Msg[];
    expect(a!.id).toEqual({ uuid: 'f47ac10b-58cc-4372-a567-0e02b2c3d479' });
    expect(a!.score).toBe(0.75);
    expect(a!.version).toBe(3);
    expect(a!.payload).toEqual({
      s: { string_value: 'x' },
      i: { integer_value: 7 },
      d: { double_value: 1.5 },
      b: { bool_value: false },
      n: { null_value: 'NULL_VALUE' },
      l: { list_value: { values: [{ integer_value: 1 }, { string_value: 'a' }] } },
      o: { struct_value: { fields: { k: { list_value: { values: [{ bool_value: true }] } } } } },
    });
    expect(a!.vectors).toEqual({
      vectors: {
        vectors: {
          img: { dense: { data: [0.5, 1] } },
          text: { sparse: { indices: [2], values: [0.25] } },
          colbert: { multi_dense: { vectors: [{ data: [1] }, { data: [2] }] } },
        },
      },
    });
    expect(a!.order_value).toEqual({ int: 2020 });
    expect(b!.id).toEqual({ num: 5 });
    expect(b!.vectors).toBeUndefined();
  });

  it('scroll: records with the unnamed vector, and the next page offset', () => {
    const r = reply('qdrant.Points/Scroll', 'qdrant.ScrollResponse', { points: [{ id: 1, payload: {}, vector: [1, 2] }], next_page_offset: 2 });
    expect(r.result).toEqual([{ id: { num: 1 }, vectors: { vector: { dense: { data: [1, 2] } } } }]);
    expect(r.next_page_offset).toEqual({ num: 2 });
    const last = reply('qdrant.Points/Scroll', 'qdrant.ScrollResponse', { points: [], next_page_offset: null });
    expect(last.next_page_offset).toBeUndefined();
  });

  it('update results, batches, counts, groups', () => {
    expect(reply('qdrant.Points/Upsert', 'qdrant.PointsOperationResponse', { operation_id: 12, status: 'completed' }).result).toEqual({ operation_id: 12, status: 'Completed' });
    expect(reply('qdrant.Points/Upsert', 'qdrant.PointsOperationResponse', { operation_id: null, status: 'acknowledged' }).result).toEqual({ status: 'Acknowledged' });
    expect(reply('qdrant.Points/UpdateBatch', 'qdrant.UpdateBatchResponse', [{ operation_id: 1, status: 'completed' }]).result).toEqual([{ operation_id: 1, status: 'Completed' }]);
    expect(reply('qdrant.Points/Count', 'qdrant.CountResponse', { count: 9 }).result).toEqual({ count: 9 });
    expect(reply('qdrant.Points/SearchBatch', 'qdrant.SearchBatchResponse', [[{ id: 1, version: 0, score: 1 }], []]).result).toEqual([
      { result: [{ id: { num: 1 }, score: 1, version: 0 }] },
      {},
    ]);
    expect(reply('qdrant.Points/QueryBatch', 'qdrant.QueryBatchResponse', [{ points: [{ id: 2, version: 0, score: 0.5 }] }]).result).toEqual([
      { result: [{ id: { num: 2 }, score: 0.5, version: 0 }] },
    ]);
    expect(
      reply('qdrant.Points/QueryGroups', 'qdrant.QueryGroupsResponse', {
        groups: [
          { id: 'red', hits: [{ id: 1, version: 0, score: 1 }], lookup: { id: 'red', payload: { n: 1 } } },
          { id: 7, hits: [] },
        ],
      }).result,
    ).toEqual({
      groups: [
        { id: { string_value: 'red' }, hits: [{ id: { num: 1 }, score: 1, version: 0 }], lookup: { id: { uuid: 'red' }, payload: { n: { integer_value: 1 } } } },
        { id: { unsigned_value: 7 } },
      ],
    });
  });
});

describe('collection info', () => {
  it('status, optimizer status, named and sparse vector params, configs and payload schema', () => {
    const info = {
      status: 'green',
      optimizer_status: 'ok',
      indexed_vectors_count: 0,
      points_count: 3,
      segments_count: 1,
      config: {
        params: {
          vectors: { img: { size: 4, distance: 'Dot', datatype: 'float16', on_disk: false } },
          sparse_vectors: { text: { modifier: 'idf' } },
          shard_number: 1,
          replication_factor: 1,
          write_consistency_factor: 1,
          on_disk_payload: true,
        },
        hnsw_config: { m: 16, ef_construct: 100, full_scan_threshold: 10000, max_indexing_threads: 0, on_disk: false },
        optimizer_config: { deleted_threshold: 0.2, vacuum_min_vector_number: 1000, default_segment_number: 0, max_segment_size: null, memmap_threshold: null, indexing_threshold: 10000, flush_interval_sec: 5, max_optimization_threads: null },
        wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
        quantization_config: null,
        metadata: { team: 'search' },
      },
      payload_schema: { city: { data_type: 'keyword', params: { type: 'keyword', is_tenant: true }, points: 3 }, year: { data_type: 'integer', points: 2 } },
    };
    const r = reply('qdrant.Collections/Get', 'qdrant.GetCollectionInfoResponse', info).result as Msg;
    expect(r.status).toBe('Green');
    expect(r.optimizer_status).toEqual({ ok: true });
    expect(r.points_count).toBe(3);
    const config = r.config as Msg;
    expect((config.params as Msg).vectors_config).toEqual({ params_map: { map: { img: { size: 4, distance: 'Dot', datatype: 'Float16', on_disk: false } } } });
    expect((config.params as Msg).sparse_vectors_config).toEqual({ map: { text: { modifier: 'Idf' } } });
    expect((config.optimizer_config as Msg).max_optimization_threads).toEqual({ setting: 'Auto' });
    expect(config.metadata).toEqual({ team: { string_value: 'search' } });
    expect(r.payload_schema).toEqual({
      city: { data_type: 'Keyword', params: { keyword_index_params: { is_tenant: true } }, points: 3 },
      year: { data_type: 'Integer', points: 2 },
    });

    const single = reply('qdrant.Collections/Get', 'qdrant.GetCollectionInfoResponse', { ...info, optimizer_status: { error: 'disk full' }, config: { ...info.config, params: { ...info.config.params, vectors: { size: 2, distance: 'Cosine' } } } }).result as Msg;
    expect(single.optimizer_status).toEqual({ ok: false, error: 'disk full' });
    expect(((single.config as Msg).params as Msg).vectors_config).toEqual({ params: { size: 2, distance: 'Cosine' } });
  });

  it('list, exists, aliases, snapshots', () => {
    expect(reply('qdrant.Collections/List', 'qdrant.ListCollectionsResponse', { collections: [{ name: 'a' }] }).collections).toEqual([{ name: 'a' }]);
    expect(reply('qdrant.Collections/CollectionExists', 'qdrant.CollectionExistsResponse', { exists: true }).result).toEqual({ exists: true });
    expect(reply('qdrant.Collections/ListAliases', 'qdrant.ListAliasesResponse', { aliases: [{ alias_name: 'x', collection_name: 'a' }] }).aliases).toEqual([
      { alias_name: 'x', collection_name: 'a' },
    ]);
    const snap = reply('qdrant.Snapshots/Create', 'qdrant.CreateSnapshotResponse', { name: 's1.snapshot', creation_time: '2026-11-27T10:00:00', size: 1024, checksum: 'ab' });
    expect(snap.snapshot_description).toEqual({ name: 's1.snapshot', creation_time: { seconds: 1795773600, nanos: 0 }, size: 1024, checksum: 'ab' });
  });
});

describe('statuses and peers', () => {
  it('Qdrant’s HTTP statuses map to its gRPC codes', () => {
    expect([400, 422, 401, 403, 404, 409, 429, 503, 504, 500].map(grpcStatusFor)).toEqual([
      grpc.status.INVALID_ARGUMENT,
      grpc.status.INVALID_ARGUMENT,
      grpc.status.UNAUTHENTICATED,
      grpc.status.PERMISSION_DENIED,
      grpc.status.NOT_FOUND,
      grpc.status.ALREADY_EXISTS,
      grpc.status.RESOURCE_EXHAUSTED,
      grpc.status.UNAVAILABLE,
      grpc.status.DEADLINE_EXCEEDED,
      grpc.status.INTERNAL,
    ]);
  });

  it('the peer names the client address as REST’s req.ip does', () => {
    expect(peerAddress('ipv4:127.0.0.1:50312')).toBe('127.0.0.1');
    expect(peerAddress('ipv6:[::1]:50312')).toBe('::1');
    expect(peerAddress('127.0.0.1:1')).toBe('127.0.0.1');
  });
});
