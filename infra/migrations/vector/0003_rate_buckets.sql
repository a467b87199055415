-- Strict mode's read and write rate limits (services/vector-worker/src/store/rate-limit.ts): one
-- token bucket per collection and kind, shared by every worker replica, so N replicas do not
-- grant N times the configured rate. A row is created on first use and dropped whenever the
-- collection's strict mode changes (the bucket starts full again, as Qdrant's does).
create table if not exists rate_buckets (
  collection_id int not null references collections (id) on delete cascade,
  kind text not null check (kind in ('read', 'write')),
  tokens double precision not null,
  updated_at timestamptz not null,
  primary key (collection_id, kind)
);
