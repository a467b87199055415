import { z } from 'zod';
import { AccessGrantForm } from './forms.ts';
import { AccessGrant } from './replies.ts';

/**
 * Bodies and replies of the knowledge-base routes (Open WebUI 0.10.2 routers/knowledge.py and
 * models/knowledge.py): forms are pydantic's (extra keys ignored), replies loose objects like the
 * rest of replies.ts.
 */
const loose = z.looseObject;
const json = z.record(z.string(), z.unknown());
const epoch = z.number().int();

// ---- forms ---------------------------------------------------------------------------------
/** KnowledgeForm: `description` is required as in Open WebUI (no default there). */
export const KnowledgeForm = z.object({
  name: z.string(),
  description: z.string(),
  access_grants: z.array(AccessGrantForm).nullish(),
});
export const KnowledgeAccessGrantsForm = z.object({ access_grants: z.array(AccessGrantForm) });
export const KnowledgeFileIdForm = z.object({ file_id: z.string(), directory_id: z.string().nullish() });
export const KnowledgeFileBatchForm = z.array(KnowledgeFileIdForm);
export const KnowledgeFileMoveForm = z.object({ file_id: z.string(), directory_id: z.string().nullish() });
export const KnowledgeDirectoryCreateForm = z.object({ name: z.string(), parent_id: z.string().nullish() });
/** An absent `parent_id` leaves the parent alone; `null` moves the directory to the root. */
export const KnowledgeDirectoryUpdateForm = z.object({ name: z.string().nullish(), parent_id: z.string().nullish() });
export const KnowledgeManifestEntry = z.object({
  /** Base name: "readme.md". */
  filename: z.string(),
  /** Relative directory, "/"-separated: "docs/api", or "" at the root. */
  path: z.string(),
  /** SHA-256 of the raw bytes, hex. */
  checksum: z.string(),
  size: z.number().int(),
});
export const SyncDiffForm = z.object({ manifest: z.array(KnowledgeManifestEntry) });
export const SyncCleanupForm = z.object({ file_ids: z.array(z.string()), dir_ids: z.array(z.string()).default([]) });

// ---- replies -------------------------------------------------------------------------------
/** UserResponse as Open WebUI nests it in lists. */
const KnowledgeUser = loose({ id: z.string(), name: z.string(), email: z.string(), role: z.string(), profile_image_url: z.string() });
/** FileMetadataResponse: what `files` lists inside a knowledge base. */
export const KnowledgeFileMetadata = loose({ id: z.string(), hash: z.string().nullable(), meta: json.nullable(), created_at: epoch, updated_at: epoch });
/** FileModelResponse + the user who added it (FileUserResponse). */
export const KnowledgeFileUser = loose({
  id: z.string(),
  user_id: z.string(),
  hash: z.string().nullable(),
  filename: z.string(),
  data: json.nullable(),
  meta: json.nullable(),
  created_at: epoch,
  updated_at: epoch.nullable(),
  user: KnowledgeUser.nullable(),
});
/** FileModelResponse: files uploaded for a base and still being processed (GET /{id}/files/pending). */
export const KnowledgePendingFiles = z.array(KnowledgeFileUser.omit({ user: true }));
export const KnowledgeModel = loose({
  id: z.string(),
  user_id: z.string(),
  name: z.string(),
  description: z.string(),
  meta: json.nullable(),
  access_grants: z.array(AccessGrant),
  created_at: epoch,
  updated_at: epoch,
});
/** KnowledgeResponse (create, reset). */
export const KnowledgeResponse = KnowledgeModel.extend({ files: z.array(KnowledgeFileMetadata).nullable().optional() });
/** KnowledgeFilesResponse (get, update, access, file add/update/remove, batch add). */
export const KnowledgeFilesResponse = KnowledgeModel.extend({
  files: z.array(KnowledgeFileMetadata).nullable(),
  write_access: z.boolean().nullable(),
  warnings: loose({ message: z.string(), errors: z.array(z.string()) }).optional(),
});
/** KnowledgeAccessListResponse (GET /, /search). */
export const KnowledgeAccessList = z.object({
  items: z.array(KnowledgeModel.extend({ user: KnowledgeUser.nullable(), file_count: z.number().int().nullable(), write_access: z.boolean().nullable() })),
  total: z.number().int(),
});
export const KnowledgeDirectory = loose({
  id: z.string(),
  knowledge_id: z.string(),
  parent_id: z.string().nullable(),
  name: z.string(),
  user_id: z.string(),
  created_at: epoch,
  updated_at: epoch,
});
/** KnowledgeFileListResponse (GET /{id}/files, /search/files). */
export const KnowledgeFileList = z.object({
  items: z.array(KnowledgeFileUser),
  directories: z.array(KnowledgeDirectory),
  breadcrumbs: z.array(KnowledgeDirectory),
  total: z.number().int(),
});
export const SyncDiffReply = z.object({
  added: z.array(z.object({ filename: z.string(), path: z.string() })),
  modified: z.array(z.object({ filename: z.string(), path: z.string(), stale_file_id: z.string() })),
  deleted: z.array(z.object({ file_id: z.string(), filename: z.string() })),
  /** Directory paths to create, parents first. */
  mkdir: z.array(z.string()),
  /** Ids of directories no file of the manifest lives in any more. */
  rmdir: z.array(z.string()),
  unmodified_count: z.number().int(),
  /** Every existing directory path → its id. */
  directory_map: z.record(z.string(), z.string()),
});
export const KnowledgeStatusTrue = z.object({ status: z.literal(true) });
