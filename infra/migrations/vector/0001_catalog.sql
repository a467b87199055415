-- Vector store catalog (services/vector-worker/src/store/LAYOUT.md). Point tables are created per
-- collection at run time; they are data, not schema.
create schema if not exists vector;
create table if not exists vector.collections (
  id serial primary key,
  name text not null unique,
  config jsonb not null,
  created_at timestamptz not null default now()
);
create table if not exists vector.payload_indexes (
  collection_id int not null references vector.collections (id) on delete cascade,
  field text not null,
  schema jsonb not null,
  primary key (collection_id, field)
);
