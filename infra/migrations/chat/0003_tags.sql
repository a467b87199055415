-- Chat tags (Open WebUI 0.10's `tag` table): one row per user and tag id, the id being the name
-- lower-cased with spaces as underscores, `name` the spelling it was first added with. A chat
-- lists its tags as ids in `meta.tags`. Additive only.
create table tag (
  id text not null,
  name text not null,
  user_id text not null references "user" (id) on delete cascade,
  meta jsonb,
  primary key (id, user_id)
);
create index tag_user on tag (user_id);
-- Tag filters (`tag:x` in search, chats by tag) test `meta -> 'tags' ? x`.
create index chat_meta_tags on chat using gin ((meta -> 'tags'));

-- The tag ids a chat's meta lists (none when `tags` is missing or not a list).
create function chat_tag_ids(meta jsonb) returns text[]
language sql immutable as $$
  select coalesce(array(
    select jsonb_array_elements_text(case when jsonb_typeof(meta -> 'tags') = 'array' then meta -> 'tags' else '[]'::jsonb end)
  ), '{}')
$$;

-- Every writer of a user's tag rows takes this lock first (after any chat row lock it needs), so a
-- tag added to one chat while it is removed from the user's last other chat cannot lose its row:
-- whoever comes second sees the other's commit.
create function chat_tags_lock(owner text) returns void
language sql volatile as $$
  select pg_advisory_xact_lock(hashtext('chat-tags'), hashtext(owner))
$$;

-- Delete `owner`'s rows among `ids` that no unarchived chat of theirs lists any more (Open WebUI
-- removes a tag once no chat uses it; archived chats do not count, as in its counts).
create function chat_tags_drop_unused(owner text, ids text[]) returns void
language plpgsql volatile set search_path from current as $$
begin
  if coalesce(cardinality(ids), 0) = 0 then return; end if;
  perform chat_tags_lock(owner);
  delete from tag t
  where t.user_id = owner and t.id = any(ids)
    and not exists (select 1 from chat c where c.user_id = owner and not c.archived and c.meta -> 'tags' ? t.id);
end
$$;

-- Tag rows follow the chats that use them, whichever code path changes a chat: deleting or
-- archiving a chat, or dropping ids from its meta, drops rows no unarchived chat uses any more; an
-- unarchived chat (new, restored or edited) gets a row for each id it lists that has none (named
-- after the id, as Open WebUI's ensure_tags_exist does on unarchive).
create function chat_tags_follow() returns trigger
language plpgsql volatile set search_path from current as $$
declare
  owner text;
  listed_before text[] := '{}';
  listed_after text[] := '{}';
  counted_before text[] := '{}';
  counted_after text[] := '{}';
begin
  if tg_op = 'INSERT' then
    owner := new.user_id;
  else
    owner := old.user_id;
    listed_before := chat_tag_ids(old.meta);
    if not old.archived then counted_before := listed_before; end if;
  end if;
  if tg_op <> 'DELETE' then
    listed_after := chat_tag_ids(new.meta);
    if not new.archived then counted_after := listed_after; end if;
  end if;
  -- Ids taken off the chat, and ids that stop counting because the chat was archived or deleted.
  perform chat_tags_drop_unused(owner, array(
    (select unnest(listed_before) except select unnest(listed_after))
    union
    (select unnest(counted_before) except select unnest(counted_after))
  ));
  if cardinality(counted_after) > 0 then
    perform chat_tags_lock(owner);
    insert into tag (id, name, user_id) select distinct i, i, owner from unnest(counted_after) i on conflict do nothing;
  end if;
  return null;
end
$$;

create trigger chat_tags_on_insert after insert on chat
  for each row when (jsonb_typeof(new.meta -> 'tags') = 'array' and not new.archived)
  execute function chat_tags_follow();
-- Chat saves and message writes do not set these columns, so they never reach the function.
create trigger chat_tags_on_update after update of archived, meta on chat
  for each row when (old.archived is distinct from new.archived or old.meta -> 'tags' is distinct from new.meta -> 'tags')
  execute function chat_tags_follow();
create trigger chat_tags_on_delete after delete on chat
  for each row when (jsonb_typeof(old.meta -> 'tags') = 'array')
  execute function chat_tags_follow();
