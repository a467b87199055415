-- gatehouse:irreversible
-- Chat platform, part 1: accounts, groups, memories, folders + access grants, chats (the part
-- folders need), settings and the event outbox. Applied inside the chat worker's schema
-- (search_path = <schema>, public), so tests can run one schema per run. Times are epoch
-- seconds, ids are UUID strings, as Open WebUI stores them. Forward-only: the migration runner
-- takes a pg_dump of the schema before applying a file marked irreversible.

create table "user" (
  id text primary key,
  email text not null,
  name text not null,
  role text not null check (role in ('admin', 'user', 'pending')),
  profile_image_url text not null default '/user.png',
  -- scrypt$<log2 N>$<r>$<p>$<salt b64>$<hash b64>
  password_hash text not null,
  bio text,
  gender text,
  date_of_birth text,
  info jsonb,
  settings jsonb,
  last_active_at bigint not null,
  created_at bigint not null,
  updated_at bigint not null
);
create unique index user_email_key on "user" (lower(email));
-- Who became the first user (the admin) is decided by this row: one insert wins.
create table first_user (only_row boolean primary key default true check (only_row), user_id text not null);

create table "group" (
  id text primary key,
  user_id text references "user" (id) on delete set null,
  name text not null,
  description text not null default '',
  data jsonb,
  meta jsonb,
  permissions jsonb,
  created_at bigint not null,
  updated_at bigint not null
);
create table group_member (
  group_id text not null references "group" (id) on delete cascade,
  user_id text not null references "user" (id) on delete cascade,
  created_at bigint not null,
  primary key (group_id, user_id)
);
create index group_member_user on group_member (user_id);

create table folder (
  id text primary key,
  parent_id text references folder (id) on delete cascade,
  user_id text not null references "user" (id) on delete cascade,
  name text not null,
  items jsonb,
  meta jsonb,
  data jsonb,
  is_expanded boolean not null default false,
  created_at bigint not null,
  updated_at bigint not null
);
-- Open WebUI: "Folder already exists" for the same name under the same parent (case-insensitive).
create unique index folder_name_per_parent on folder (user_id, coalesce(parent_id, ''), lower(name));
create index folder_parent on folder (parent_id);

create table access_grant (
  id text primary key,
  resource_type text not null,
  resource_id text not null,
  principal_type text not null check (principal_type in ('user', 'group')),
  principal_id text not null,
  permission text not null check (permission in ('read', 'write')),
  created_at bigint not null,
  unique (resource_type, resource_id, principal_type, principal_id, permission)
);
create index access_grant_principal on access_grant (principal_type, principal_id);

create table chat (
  id text primary key,
  user_id text not null references "user" (id) on delete cascade,
  folder_id text references folder (id) on delete set null,
  title text not null,
  chat jsonb not null,
  meta jsonb not null default '{}',
  share_id text,
  archived boolean not null default false,
  pinned boolean not null default false,
  created_at bigint not null,
  updated_at bigint not null
);
create index chat_user on chat (user_id, updated_at desc);
create index chat_folder on chat (folder_id);

create table memory (
  id text primary key,
  user_id text not null references "user" (id) on delete cascade,
  type text not null default 'context' check (type <> ''),
  path text,
  content text not null,
  meta jsonb,
  -- lexical-hash-v1 (services/common/src/embedding): what /memories/query ranks by.
  embedding vector(384) not null,
  created_at bigint not null,
  updated_at bigint not null
);
create index memory_user on memory (user_id, updated_at desc);
create index memory_user_type on memory (user_id, type);

-- Settings, one row per dotted key (Open WebUI 0.10's config table); the environment only seeds
-- keys that are not there yet.
create table config (
  key text primary key,
  value jsonb not null,
  updated_at bigint not null
);

-- Domain events, written in the transaction of the change they describe; the relay publishes
-- them in seq order and stamps published_at.
create table outbox (
  seq bigserial primary key,
  event_id text not null unique,
  subject text not null,
  event jsonb not null,
  created_at timestamptz not null default now(),
  published_at timestamptz
);
create index outbox_pending on outbox (seq) where published_at is null;
