-- OAuth / OIDC sign-in (issue 13). Open WebUI 0.10.2 keeps an account's provider links on the user
-- row as `oauth` = {"<provider>": {"sub": "<subject>"}} and finds an account by provider and
-- subject; here the same JSON is kept on "user" (as Open WebUI shows it) and the lookup key is a
-- table of its own, whose primary key makes one subject belong to one account even when two
-- first sign-ins of the same person race.

alter table "user" add column oauth jsonb;

create table user_oauth (
  provider text not null,
  sub text not null,
  user_id text not null references "user" (id) on delete cascade,
  created_at bigint not null,
  primary key (provider, sub)
);
create index user_oauth_user on user_oauth (user_id);
