// /api/v1/folders: my folders and those shared with me, a folder's grants and its shared chats.
import { api, type Body, type Reply } from '../client.ts';

export type Folder = Reply<'folders.list'>[number];
export type SharedFolder = Reply<'folders.shared'>[number];
export type FolderWithGrants = Reply<'folders.get'>;
export type AccessGrant = Body<'folders.updateAccess'>['access_grants'][number];
export type SharedFolderChats = Reply<'folders.sharedChats'>;
/** What the sidebar shows of a chat in a folder: my own folder's (chats/folder) or a shared one's. */
export interface FolderChatItem {
  id: string;
  title: string;
  pinned?: boolean | null;
  readonly?: boolean;
  owner_name?: string;
}

const one = (id: string) => `/api/v1/folders/${encodeURIComponent(id)}`;

export const listFolders = (): Promise<Folder[]> => api.get<Folder[]>('/api/v1/folders/');
export const listSharedFolders = (): Promise<SharedFolder[]> => api.get<SharedFolder[]>('/api/v1/folders/shared');
export const getFolder = (id: string): Promise<FolderWithGrants> => api.get<FolderWithGrants>(one(id));
/** A folder shared with me: its chats and my permission. */
export const listSharedFolderChats = (id: string): Promise<SharedFolderChats> => api.get<SharedFolderChats>(`${one(id)}/shared/chats`);
export const setFolderExpanded = (id: string, expanded: boolean): Promise<Reply<'folders.updateExpanded'>> =>
  api.post<Reply<'folders.updateExpanded'>>(`${one(id)}/update/expanded`, { is_expanded: expanded } satisfies Body<'folders.updateExpanded'>);
/** Replaces the folder's grants with these. */
export const updateFolderAccess = (id: string, grants: AccessGrant[]): Promise<FolderWithGrants> =>
  api.post<FolderWithGrants>(`${one(id)}/access/update`, { access_grants: grants } satisfies Body<'folders.updateAccess'>);
