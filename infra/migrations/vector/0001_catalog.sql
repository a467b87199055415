-- The vector worker's catalog (services/vector-worker/src/store/LAYOUT.md), applied inside its
-- schema (VECTOR_SCHEMA, default vector; tests use one per run). Each collection's point table
-- and operation sequence are created by the worker when the collection is: that is data, not
-- schema. `if not exists`: a schema the worker created at start-up, before this folder existed,
-- is carried forward with its collections.
create table if not exists collections (
  id serial primary key,
  name text not null unique,
  config jsonb not null,
  created_at timestamptz not null default now()
);
create table if not exists payload_indexes (
  collection_id int not null references collections (id) on delete cascade,
  field text not null,
  schema jsonb not null,
  primary key (collection_id, field)
);
