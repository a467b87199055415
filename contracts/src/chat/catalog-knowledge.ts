import { catalog, DELETE, GET, POST } from './catalog-kit.ts';
import * as K from './knowledge-forms.ts';
import { Bytes, TrueReply } from './replies.ts';

const KB = '/api/v1/knowledge';

/**
 * The chat platform's knowledge bases (/api/v1/knowledge, Open WebUI 0.10.2 routers/knowledge.py):
 * bases, access grants, files, directories, folder sync, export; spread into CHAT_CATALOG
 * (catalog.ts). Static paths (`/create`, `/search`, `/reindex`) win over `/:id`.
 */
export const KNOWLEDGE_OPS = catalog({
  'knowledge.list': { subject: 'chat.knowledge.list', routes: [GET(`${KB}/`)], reply: K.KnowledgeAccessList, auth: 'verified', events: [] },
  'knowledge.search': { subject: 'chat.knowledge.search', routes: [GET(`${KB}/search`)], reply: K.KnowledgeAccessList, auth: 'verified', events: [] },
  'knowledge.searchFiles': { subject: 'chat.knowledge.searchFiles', routes: [GET(`${KB}/search/files`)], reply: K.KnowledgeFileList, auth: 'verified', events: [] },
  'knowledge.create': { subject: 'chat.knowledge.create', routes: [POST(`${KB}/create`)], body: K.KnowledgeForm, reply: K.KnowledgeResponse, auth: 'verified', events: ['knowledge.created', 'knowledge.access_updated'] },
  // Open WebUI reindexes every knowledge base at once, admin only.
  'knowledge.reindex': { subject: 'chat.knowledge.reindex', routes: [POST(`${KB}/reindex`)], reply: TrueReply, auth: 'verified', events: ['knowledge.reindexed'] },
  'knowledge.get': { subject: 'chat.knowledge.get', routes: [GET(`${KB}/:id`)], reply: K.KnowledgeFilesResponse, auth: 'verified', events: [] },
  'knowledge.update': {
    subject: 'chat.knowledge.update',
    routes: [POST(`${KB}/:id/update`)],
    body: K.KnowledgeForm,
    reply: K.KnowledgeFilesResponse,
    auth: 'verified',
    events: ['knowledge.updated', 'knowledge.access_updated'],
  },
  'knowledge.updateAccess': {
    subject: 'chat.knowledge.updateAccess',
    routes: [POST(`${KB}/:id/access/update`)],
    body: K.KnowledgeAccessGrantsForm,
    reply: K.KnowledgeFilesResponse,
    auth: 'verified',
    events: ['knowledge.access_updated'],
  },
  'knowledge.files': { subject: 'chat.knowledge.files', routes: [GET(`${KB}/:id/files`)], reply: K.KnowledgeFileList, auth: 'verified', events: [] },
  'knowledge.pendingFiles': { subject: 'chat.knowledge.pendingFiles', routes: [GET(`${KB}/:id/files/pending`)], reply: K.KnowledgePendingFiles, auth: 'verified', events: [] },
  'knowledge.addFile': {
    subject: 'chat.knowledge.addFile',
    routes: [POST(`${KB}/:id/file/add`)],
    body: K.KnowledgeFileIdForm,
    reply: K.KnowledgeFilesResponse,
    auth: 'verified',
    events: ['knowledge.file.added'],
  },
  'knowledge.updateFile': {
    subject: 'chat.knowledge.updateFile',
    routes: [POST(`${KB}/:id/file/update`)],
    body: K.KnowledgeFileIdForm,
    reply: K.KnowledgeFilesResponse,
    auth: 'verified',
    events: ['knowledge.file.updated'],
  },
  'knowledge.removeFile': {
    subject: 'chat.knowledge.removeFile',
    routes: [POST(`${KB}/:id/file/remove`)],
    body: K.KnowledgeFileIdForm,
    reply: K.KnowledgeFilesResponse,
    auth: 'verified',
    events: ['knowledge.file.removed', 'file.deleted'],
  },
  'knowledge.moveFile': {
    subject: 'chat.knowledge.moveFile',
    routes: [POST(`${KB}/:id/file/move`)],
    body: K.KnowledgeFileMoveForm,
    reply: K.KnowledgeStatusTrue,
    auth: 'verified',
    events: ['knowledge.file.moved'],
  },
  'knowledge.batchAddFiles': {
    subject: 'chat.knowledge.batchAddFiles',
    routes: [POST(`${KB}/:id/files/batch/add`)],
    body: K.KnowledgeFileBatchForm,
    reply: K.KnowledgeFilesResponse,
    auth: 'verified',
    events: ['knowledge.file.added'],
  },
  'knowledge.delete': { subject: 'chat.knowledge.delete', routes: [DELETE(`${KB}/:id/delete`)], reply: TrueReply, auth: 'verified', events: ['knowledge.deleted'] },
  'knowledge.reset': { subject: 'chat.knowledge.reset', routes: [POST(`${KB}/:id/reset`)], reply: K.KnowledgeResponse, auth: 'verified', events: ['knowledge.reset'] },
  // A zip of the extracted texts under their directory paths; admin only, as Open WebUI.
  'knowledge.export': { subject: 'chat.knowledge.export', routes: [GET(`${KB}/:id/export`)], reply: Bytes, auth: 'admin', events: [] },
  'knowledge.syncDiff': { subject: 'chat.knowledge.syncDiff', routes: [POST(`${KB}/:id/sync/diff`)], body: K.SyncDiffForm, reply: K.SyncDiffReply, auth: 'verified', events: [] },
  'knowledge.syncCleanup': {
    subject: 'chat.knowledge.syncCleanup',
    routes: [POST(`${KB}/:id/sync/cleanup`)],
    body: K.SyncCleanupForm,
    reply: K.KnowledgeStatusTrue,
    auth: 'verified',
    events: ['knowledge.file.removed', 'knowledge.directory.deleted', 'file.deleted'],
  },
  'knowledge.dirs.create': {
    subject: 'chat.knowledge.dirs.create',
    routes: [POST(`${KB}/:id/dirs/create`)],
    body: K.KnowledgeDirectoryCreateForm,
    reply: K.KnowledgeDirectory,
    auth: 'verified',
    events: ['knowledge.directory.created'],
  },
  'knowledge.dirs.update': {
    subject: 'chat.knowledge.dirs.update',
    routes: [POST(`${KB}/:id/dirs/:dir_id/update`)],
    body: K.KnowledgeDirectoryUpdateForm,
    reply: K.KnowledgeDirectory,
    auth: 'verified',
    events: ['knowledge.directory.updated'],
  },
  'knowledge.dirs.delete': {
    subject: 'chat.knowledge.dirs.delete',
    routes: [DELETE(`${KB}/:id/dirs/:dir_id/delete`)],
    reply: K.KnowledgeStatusTrue,
    auth: 'verified',
    events: ['knowledge.directory.deleted', 'knowledge.file.removed'],
  },
});
