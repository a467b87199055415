-- pgvector is built and installed by infra/bringup; the vector and chat schemas need it.
create extension if not exists vector;
