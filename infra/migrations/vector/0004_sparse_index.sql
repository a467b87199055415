-- Sparse vectors became searchable (issue 15; services/vector-worker/src/store/sparse.ts): each
-- collection's point table `points_<id>` gets an inverted index `points_<id>_sparse` kept by a
-- trigger from the row's `sparse` map (LAYOUT.md). `sparse_index_create(schema, id)` builds the
-- three pieces for one collection — the worker calls it when it creates a point table — and this
-- migration runs it for the collections that exist already, filling their posting lists from
-- the stored vectors, so their sparse vectors are searchable without re-upserting.
create or replace function sparse_index_create(s text, collection_id int) returns void language plpgsql as $fn$
declare
  points text := format('%I.%I', s, 'points_' || collection_id);
  side text := format('%I.%I', s, 'points_' || collection_id || '_sparse');
  sync text := format('%I.%I', s, 'points_' || collection_id || '_sparse_sync');
begin
  execute format($q$
    create table %s (
      pid text not null references %s (pid) on delete cascade,
      name text not null,
      idx bigint not null,
      value real not null,
      primary key (name, idx, pid) include (value)
    )$q$, side, points);
  execute format('create index on %s (pid)', side);
  execute format($q$
    create function %s() returns trigger language plpgsql as $body$
    begin
      if tg_op = 'UPDATE' then
        if new.sparse is not distinct from old.sparse then return null; end if;
        delete from %s where pid = old.pid;
      end if;
      insert into %s (pid, name, idx, value)
        select new.pid, v.key, i.idx::bigint, x.value::real
        from jsonb_each(coalesce(new.sparse, '{}'::jsonb)) v,
             jsonb_array_elements_text(v.value -> 'indices') with ordinality i(idx, n)
             join jsonb_array_elements_text(v.value -> 'values') with ordinality x(value, n) using (n);
      return null;
    end $body$ $q$, sync, side, side);
  execute format('create trigger sparse_sync after insert or update of sparse on %s for each row execute function %s()', points, sync);
  -- Existing points (none for a new collection).
  execute format($q$
    insert into %s (pid, name, idx, value)
      select p.pid, v.key, i.idx::bigint, x.value::real
      from %s p, jsonb_each(p.sparse) v,
           jsonb_array_elements_text(v.value -> 'indices') with ordinality i(idx, n)
           join jsonb_array_elements_text(v.value -> 'values') with ordinality x(value, n) using (n)
      where p.sparse is not null$q$, side, points);
end $fn$;

do $$
declare
  c record;
begin
  for c in select id from collections order by id loop
    if to_regclass(format('%I.%I', current_schema(), 'points_' || c.id)) is not null
       and to_regclass(format('%I.%I', current_schema(), 'points_' || c.id || '_sparse')) is null then
      perform sparse_index_create(current_schema(), c.id);
    end if;
  end loop;
end $$;
