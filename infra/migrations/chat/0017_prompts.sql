-- Workspace prompts (Open WebUI 0.10.2's prompt and prompt_history tables): a prompt is a text
-- with a slash command (stored without the slash, unique across everyone), a name, tags and the
-- id of its active version. Each change of what it says writes a snapshot to prompt_history, and
-- the new snapshot becomes the active version. A user's prompts go with the user.
create table prompt (
  id text primary key,
  command text not null,
  user_id text not null references "user" (id) on delete cascade,
  name text not null,
  content text not null,
  data jsonb,
  meta jsonb,
  tags jsonb not null default '[]',
  is_active boolean not null default true,
  version_id text,
  created_at bigint not null,
  updated_at bigint not null
);
-- Two prompts racing for one command: the second insert fails here, never two rows.
create unique index prompt_command on prompt (command);
create index prompt_updated on prompt (updated_at desc);

create table prompt_history (
  id text primary key,
  -- the order versions were written in (two can share a second)
  seq bigint generated always as identity,
  prompt_id text not null references prompt (id) on delete cascade,
  parent_id text,
  snapshot jsonb not null,
  user_id text not null,
  commit_message text,
  created_at bigint not null
);
create index prompt_history_prompt on prompt_history (prompt_id, seq desc);

-- Grants on a prompt are access_grant rows with resource_type 'prompt'; they go with the prompt
-- (access_grant has no foreign key, as for shared chats).
create function drop_prompt_grants() returns trigger language plpgsql as $$
begin
  delete from access_grant where resource_type = 'prompt' and resource_id = old.id;
  return old;
end $$;
create trigger prompt_drop_grants after delete on prompt
  for each row execute function drop_prompt_grants();
