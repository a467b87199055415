// /api/v1/retrieval: searching knowledge bases and files.
import { api, type Body, type Reply } from '../client.ts';

/** One list per query (Chroma's shape). */
export type QueryResult = Reply<'retrieval.queryCollection'>;

export const queryCollection = (collectionNames: string[], query: string, k = 5): Promise<QueryResult> =>
  api.post<QueryResult>('/api/v1/retrieval/query/collection', { collection_names: collectionNames, query, k } satisfies Body<'retrieval.queryCollection'>);
