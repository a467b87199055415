import { join } from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
// A sub-path of its own: the web UI type-checks the contracts' index without Node's types.
import { QDRANT_PROTO_DIR, QDRANT_PROTO_FILES } from '@gatehouse/contracts/qdrant-grpc';

/**
 * How messages look in JavaScript on both sides of the translation: field names as in the
 * .proto (snake_case, like Qdrant's REST JSON), enums by name, 64-bit integers as decimal strings
 * (a u64 point id above 2^53 must not pass through a double; to-rest.ts turns them into exact
 * numbers or BigInts), and only the fields the client set (so an absent field stays absent
 * and REST applies its default). A oneof is just whichever of its fields is present.
 */
export const MESSAGE_FORM: Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  arrays: false,
  objects: false,
  oneofs: false,
  includeDirs: [QDRANT_PROTO_DIR],
};

const packageDefinition = loadSync([...QDRANT_PROTO_FILES], MESSAGE_FORM);

/** The gRPC services Qdrant serves on 6334, by full name (`qdrant.Points`, `grpc.health.v1.Health`…). */
export function qdrantService(name: 'qdrant.Collections' | 'qdrant.Points' | 'qdrant.Snapshots' | 'qdrant.Qdrant' | 'grpc.health.v1.Health'): ServiceDefinition {
  return packageDefinition[name] as ServiceDefinition;
}

/** The same files as protobufjs reflection: the translators walk messages by their declared types. */
const root = new protobuf.Root();
root.loadSync(QDRANT_PROTO_FILES.map((f) => join(QDRANT_PROTO_DIR, f)), { keepCase: true });
root.resolveAll();

export function protoType(fullName: string): protobuf.Type {
  return root.lookupType(fullName);
}

export function protoEnum(fullName: string): protobuf.Enum {
  return root.lookupEnum(fullName);
}

/** Encode / decode with the same message form the server uses (for tests and the benchmark). */
export function encodeMessage(fullName: string, obj: Record<string, unknown>): Uint8Array {
  const t = protoType(fullName);
  return t.encode(t.fromObject(obj)).finish();
}
export function decodeMessage(fullName: string, bytes: Uint8Array): Record<string, unknown> {
  const t = protoType(fullName);
  return t.toObject(t.decode(bytes), MESSAGE_FORM as protobuf.IConversionOptions) as Record<string, unknown>;
}
