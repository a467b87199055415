#!/usr/bin/env node
// Runs src/main.ts through tsx's loader, resolved from this package, so MCP clients can start the
// server from any working directory: `node /path/to/services/vector-mcp/bin/gatehouse-vector-mcp.mjs`.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/main.ts', import.meta.url).href);
