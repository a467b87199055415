-- Per-user API keys (issue 13): Open WebUI 0.10.2 keeps one key per user in its api_key table.
-- Here only the key's SHA-256 digest is stored: a key is 122 random bits (uuid4), so a fast
-- unsalted hash cannot be brute-forced and lets a lookup be one index probe; a leaked table does
-- not give anyone a usable key. `hint` is the key's last four characters, for GET's masked answer.
create table api_key (
  user_id text primary key references "user" (id) on delete cascade,
  key_hash text not null unique,
  hint text not null,
  created_at bigint not null
);
