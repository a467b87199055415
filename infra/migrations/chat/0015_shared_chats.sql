-- Chat sharing as Open WebUI 0.10.2 (models/shared_chats.py): a share is a snapshot of a chat's
-- title and JSON under its own id (the share id, also kept in chat.share_id), refreshed in place
-- when the owner shares again. Who may read it beyond its sharer and admins are access_grant rows
-- with resource_type 'shared_chat' and resource_id the chat's id.
create table shared_chat (
  id text primary key,
  chat_id text not null references chat (id) on delete cascade,
  user_id text not null references "user" (id) on delete cascade,
  title text not null,
  chat jsonb not null,
  created_at bigint not null,
  updated_at bigint not null
);
create index shared_chat_chat on shared_chat (chat_id);
create index shared_chat_user on shared_chat (user_id, updated_at desc);

-- A share id names one chat.
create unique index chat_share_id on chat (share_id) where share_id is not null;

-- access_grant has no foreign key (it serves several resource types): a deleted chat takes its
-- share grants with it here, so no grant outlives what it opened.
create function drop_shared_chat_grants() returns trigger language plpgsql as $$
begin
  delete from access_grant where resource_type = 'shared_chat' and resource_id = old.id;
  return old;
end $$;
create trigger chat_drop_shared_chat_grants after delete on chat
  for each row execute function drop_shared_chat_grants();
