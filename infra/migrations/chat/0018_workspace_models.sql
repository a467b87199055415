-- Workspace models (Open WebUI 0.10.2's model table): a custom model is a preset over a base
-- model (base_model_id) — a name, meta (profile image, description, capabilities, knowledge,
-- tool ids…) and params (system prompt, temperature…) — that /api/models lists beside the base
-- models and completions resolve to the base model. A row without base_model_id overrides a base
-- model's name and meta. The id is what clients send as `model`, so it is the primary key.
create table model (
  id text primary key,
  user_id text not null references "user" (id) on delete cascade,
  base_model_id text,
  name text not null,
  params jsonb not null default '{}',
  meta jsonb not null default '{}',
  is_active boolean not null default true,
  created_at bigint not null,
  updated_at bigint not null
);
create index model_updated on model (updated_at desc);

-- Grants on a model are access_grant rows with resource_type 'model'; they go with the model.
create function drop_model_grants() returns trigger language plpgsql as $$
begin
  delete from access_grant where resource_type = 'model' and resource_id = old.id;
  return old;
end $$;
create trigger model_drop_grants after delete on model
  for each row execute function drop_model_grants();
