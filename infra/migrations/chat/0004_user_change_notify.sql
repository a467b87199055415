-- Every change to a user row (role, name, deletion…) is announced at commit on <schema>_users with
-- the user's id, whichever code path made it: chat workers cache the rows they authorise with and
-- drop a copy the moment it is stale. Additive only.
create function user_changed_notify() returns trigger
language plpgsql volatile set search_path from current as $$
begin
  perform pg_notify(current_schema() || '_users', old.id);
  return null;
end
$$;
create trigger user_changed after update or delete on "user"
  for each row execute function user_changed_notify();
