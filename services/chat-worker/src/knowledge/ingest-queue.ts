import type { Bus } from '@gatehouse/common';

/**
 * Hands files to the ingest consumer (extraction, chunking, embedding) off the request path.
 * Operations reach it as `ctx.ingest`. Placeholder until the work queue lands: it does nothing.
 */
export interface IngestQueue {
  /** Queue each file for (re)processing; resolves once the jobs are durably queued. */
  enqueue(fileIds: string[]): Promise<void>;
}

export function createIngestQueue(_bus: Bus): IngestQueue {
  return { enqueue: async () => undefined };
}
