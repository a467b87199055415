import { fileURLToPath } from 'node:url';

/** Qdrant 1.19.0's gRPC `.proto` files (contracts/proto/qdrant/, see its README). */
export const QDRANT_PROTO_DIR = fileURLToPath(new URL('../proto/qdrant/', import.meta.url));

/** The files that define every service the edge serves on the gRPC port (the rest are imported by them). */
export const QDRANT_PROTO_FILES = ['qdrant.proto'] as const;
