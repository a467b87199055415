-- Retrieval in chat (issue 11): the citations an answer was grounded on, and the connections of
-- external knowledge bases.

-- Open WebUI 0.10's chat_message keeps a reply's `sources` (the `{source, document, metadata,
-- distances}` list streamed first); the chat JSON keeps them on the message as well.
alter table chat_message add column sources jsonb;

-- Open WebUI 0.10 keeps these as one config value (`external_knowledge.connections`, a JSON list
-- rewritten on every change); one row per connection lets two admins change two connections at
-- once without losing either change. `auth_config` ({api_key}) is never returned by the API.
-- Knowledge bases point at a connection from their meta (`meta.external.connection_id`).
create table knowledge_external_connection (
  id text primary key,
  name text not null,
  provider text not null,
  endpoint text not null,
  auth_config jsonb not null default '{}'::jsonb,
  config jsonb not null default '{}'::jsonb,
  capabilities jsonb not null default '{"retrieve": true}'::jsonb,
  health jsonb,
  enabled boolean not null default true,
  created_by text not null,
  created_at bigint not null,
  updated_at bigint not null
);
