-- Webhooks (issue 12): Open WebUI 0.10.2's registry (`/api/events/webhooks`, which it keeps as
-- the config key events.webhooks) as a table, and the webhook dispatcher's durable delivery state.

create table webhook (
  id text primary key,
  name text not null,
  url text not null,
  enabled boolean not null default true,
  events jsonb not null default '["*"]',
  -- null: every event; [] only events with no user; else [{type: user|group, id}]
  targets jsonb,
  -- Standard Webhooks signing secrets, newest first: [{secret: "whsec_…", expires_at: epoch s | null}].
  -- Kept as the raw secret because the dispatcher must compute an HMAC with it (a hash would be
  -- useless); it never leaves the database except once, in the answer that creates or rotates it.
  secrets jsonb not null default '[]',
  -- The dispatcher's health bookkeeping: first failure of the current failing streak (epoch s).
  failing_since double precision,
  disabled_reason text,
  created_at bigint not null,
  updated_at bigint not null
);

-- One row per (webhook, event): every attempt carries its id as `webhook-id`. The dispatcher
-- inserts it before acknowledging the stream message, so a crash never loses one; `sending`
-- rows whose lease ran out are taken again.
create table webhook_delivery (
  id text primary key,
  webhook_id text not null references webhook (id) on delete cascade,
  event_id text not null,
  event text not null,
  payload jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'sending', 'delivered', 'dead')),
  attempts integer not null default 0,
  last_status integer,
  last_error text,
  latency_ms integer,
  -- when the event was committed (ms), for latency
  origin_ms double precision not null,
  next_attempt_at double precision,
  lease_until double precision,
  created_at double precision not null,
  updated_at double precision not null,
  delivered_at double precision
);
create unique index webhook_delivery_event on webhook_delivery (webhook_id, event_id);
create index webhook_delivery_due on webhook_delivery (next_attempt_at) where status in ('pending', 'sending');
create index webhook_delivery_recent on webhook_delivery (webhook_id, created_at desc);
create index webhook_delivery_dead on webhook_delivery (updated_at desc) where status = 'dead';
