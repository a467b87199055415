-- Chat platform: files, knowledge bases with their directory trees, and the searchable chunks of
-- each file (issue 11). Shapes follow Open WebUI 0.10.2's tables (file, knowledge,
-- knowledge_directory, knowledge_file); the chunks replace its external vector database with one
-- table that Postgres searches natively: full text (tsvector + GIN) and pgvector neighbours.

-- A file as Open WebUI's FileModel: `data` holds {status: pending|completed|failed, error?,
-- content?} (the extracted text), `meta` {name, content_type, size, …}. The bytes live in the
-- upload store under `path`, content-addressed by `hash` (SHA-256, hex): two uploads of the same
-- bytes are two rows over one blob.
create table file (
  id text primary key,
  user_id text not null references "user" (id) on delete cascade,
  hash text,
  filename text not null,
  path text,
  data jsonb not null default '{}'::jsonb,
  meta jsonb not null default '{}'::jsonb,
  access_control jsonb,
  created_at bigint not null,
  updated_at bigint not null
);
create index file_user on file (user_id, created_at desc);
create index file_hash on file (hash);

-- Read/write grants on a knowledge base are access_grant rows with resource_type 'knowledge'.
-- An external knowledge base (answered by an outside retrieval service) keeps its connection in meta.
create table knowledge (
  id text primary key,
  user_id text not null references "user" (id) on delete cascade,
  name text not null,
  description text not null default '',
  meta jsonb,
  data jsonb,
  created_at bigint not null,
  updated_at bigint not null
);
create index knowledge_user on knowledge (user_id, updated_at desc);

-- Folder uploads keep their relative paths as a tree of directories per knowledge base.
create table knowledge_directory (
  id text primary key,
  knowledge_id text not null references knowledge (id) on delete cascade,
  parent_id text references knowledge_directory (id) on delete cascade,
  name text not null,
  created_at bigint not null,
  updated_at bigint not null
);
create unique index knowledge_directory_name on knowledge_directory (knowledge_id, coalesce(parent_id, ''), name);

create table knowledge_file (
  id text primary key,
  knowledge_id text not null references knowledge (id) on delete cascade,
  file_id text not null references file (id) on delete cascade,
  -- Removing a directory removes the files under it from the knowledge base.
  directory_id text references knowledge_directory (id) on delete cascade,
  user_id text not null,
  created_at bigint not null,
  updated_at bigint not null,
  unique (knowledge_id, file_id)
);
create index knowledge_file_file on knowledge_file (file_id);
create index knowledge_file_directory on knowledge_file (knowledge_id, directory_id);

-- A file's chunks, embedded once: a knowledge base searches the chunks of the files linked to it,
-- so adding a processed file to a knowledge base copies nothing. `embedding` has no fixed
-- dimension (the embedding engine is a setting); the default engine's vectors get an HNSW index
-- on their expression, other engines are searched exactly until an index for their size is added.
create table file_chunk (
  id bigserial primary key,
  file_id text not null references file (id) on delete cascade,
  chunk_index integer not null,
  content text not null,
  meta jsonb not null default '{}'::jsonb,
  embedding_model text not null,
  embedding vector not null,
  language regconfig not null default 'english',
  tsv tsvector generated always as (to_tsvector(language, content)) stored,
  unique (file_id, chunk_index)
);
create index file_chunk_tsv on file_chunk using gin (tsv);
create index file_chunk_lexical_hnsw on file_chunk using hnsw ((embedding::vector(384)) vector_cosine_ops)
  where embedding_model = 'lexical-hash-v1';
