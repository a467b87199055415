// /api/v1/retrieval/process/web: a web page fetched and stored as a collection, as Open WebUI's
// `#https://…` in the message box does before the message is sent.
import { api, type Body, type Reply } from '../client.ts';

export type ProcessWebReply = Reply<'retrieval.processWeb'>;

export const processWeb = (url: string): Promise<ProcessWebReply> =>
  api.post<ProcessWebReply>('/api/v1/retrieval/process/web', { url } satisfies Body<'retrieval.processWeb'>);
