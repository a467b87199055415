-- Chat platform, part 2: the messages of a chat as rows with their parent links (Open WebUI 0.10's
-- chat_message table; the chat's JSON keeps its `history` for clients), the compaction checkpoint
-- on a user message (context_summary, 0.10.0), reasoning streamed apart from the answer (0.10.2),
-- and which member model an arena model picked.
create table chat_message (
  id text not null,
  chat_id text not null references chat (id) on delete cascade,
  user_id text not null references "user" (id) on delete cascade,
  role text not null,
  parent_id text,
  content text not null default '',
  reasoning text,
  output jsonb,
  tool_calls jsonb,
  model_id text,
  selected_model_id text,
  usage jsonb,
  context_summary text,
  done boolean not null default true,
  created_at bigint not null,
  updated_at bigint not null,
  primary key (chat_id, id)
);
create index chat_message_parent on chat_message (chat_id, parent_id);
create index chat_pinned on chat (user_id, pinned) where pinned;
