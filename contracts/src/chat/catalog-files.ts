import { z } from 'zod';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';
import * as F from './forms.ts';
import * as R from './replies.ts';

/**
 * The chat platform's files (Open WebUI 0.10.2's routers/files.py under /api/v1/files), spread
 * into CHAT_CATALOG (catalog.ts). Three need the edge's help (services/edge/src/faces/chat/files-routes.ts):
 * the upload is multipart — the edge streams the `file` part into the object store and sends the
 * worker `FileUploadForm` naming it; `process/status?stream=true` is Server-Sent Events the edge
 * writes from this operation's answers; `content` is bytes (`R.Bytes`: see ChatOpReply.download).
 *
 * `file.content_updated` is written by the ingest consumer (services/ingest-worker)
 * when the processing an operation queued ends; it is listed on the operations that queue it.
 */
export const FILES_OPS = catalog({
  'files.upload': {
    subject: 'chat.files.upload',
    routes: [POST('/api/v1/files/')],
    body: F.FileUploadForm,
    reply: R.FileModelResponse,
    auth: 'verified',
    events: ['file.uploaded', 'file.content_updated'],
    edge: { handler: 'upload' },
  },
  'files.list': { subject: 'chat.files.list', routes: [GET('/api/v1/files/')], reply: R.FileListResponse, auth: 'verified', events: [] },
  'files.count': { subject: 'chat.files.count', routes: [GET('/api/v1/files/count')], reply: z.number().int(), auth: 'verified', events: [] },
  'files.search': { subject: 'chat.files.search', routes: [GET('/api/v1/files/search')], reply: R.FileModelResponse.array(), auth: 'verified', events: [] },
  // Open WebUI's route is DELETE /all (admin: every user's files); /all/delete is kept for older clients' habit.
  'files.deleteAll': {
    subject: 'chat.files.deleteAll',
    routes: [DELETE('/api/v1/files/all'), DELETE('/api/v1/files/all/delete')],
    reply: R.MessageReply,
    auth: 'admin',
    events: ['file.deleted_all'],
  },
  'files.get': { subject: 'chat.files.get', routes: [GET('/api/v1/files/:id')], reply: R.FileModel, auth: 'verified', events: [] },
  'files.status': { subject: 'chat.files.status', routes: [GET('/api/v1/files/:id/process/status')], reply: R.FileStatus, auth: 'verified', events: [], edge: { handler: 'statusEvents' } },
  'files.dataContent': { subject: 'chat.files.dataContent', routes: [GET('/api/v1/files/:id/data/content')], reply: R.FileDataContent, auth: 'verified', events: [] },
  'files.updateDataContent': {
    subject: 'chat.files.updateDataContent',
    routes: [POST('/api/v1/files/:id/data/content/update')],
    body: F.FileContentForm,
    reply: R.FileDataContent,
    auth: 'verified',
    events: ['file.content_updated'],
  },
  // `?attachment=true` → Content-Disposition attachment; /content/{file_name} always attaches.
  'files.content': {
    subject: 'chat.files.content',
    routes: [GET('/api/v1/files/:id/content'), GET('/api/v1/files/:id/content/:file_name')],
    reply: R.Bytes,
    auth: 'verified',
    events: [],
  },
  'files.rename': {
    subject: 'chat.files.rename',
    routes: [POST('/api/v1/files/:id/rename')],
    body: F.FileRenameForm,
    reply: R.FileModel,
    auth: 'verified',
    events: ['file.renamed'],
  },
  'files.delete': {
    subject: 'chat.files.delete',
    routes: [DELETE('/api/v1/files/:id'), DELETE('/api/v1/files/:id/delete')],
    reply: R.MessageReply,
    auth: 'verified',
    events: ['file.deleted'],
  },
});
