-- Collection aliases (issue 15; services/vector-worker/src/store/aliases.ts). An alias names a
-- collection by id, so deleting the collection drops its aliases (as Qdrant does) and a renamed
-- or recovered collection can take them over in the same transaction.
create table if not exists aliases (
  alias_name text primary key,
  collection_id int not null references collections (id) on delete cascade
);
create index if not exists aliases_collection_id on aliases (collection_id);
