-- Ratings of answers (Open WebUI 0.10.2's feedback table): one row per rating a user gave, with
-- the rating (`data`: rating, model_id, sibling_model_ids, reason, comment, tags…), where it was
-- given (`meta`: arena, chat_id, message_id) and the chat as it was then (`snapshot`). A user's
-- ratings go with the user.
create table feedback (
  id text primary key,
  user_id text not null references "user" (id) on delete cascade,
  version bigint not null default 0,
  type text not null,
  data jsonb,
  meta jsonb,
  snapshot jsonb,
  created_at bigint not null,
  updated_at bigint not null
);
create index feedback_user_updated on feedback (user_id, updated_at desc);
create index feedback_updated on feedback (updated_at desc);

-- The browser's time zone, which Open WebUI's front end reports on every load
-- (POST /api/v1/auths/update/timezone); null until it has.
alter table "user" add column timezone text;
