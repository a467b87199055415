-- The vector type lives in public, whatever created the extension first (before the runners were
-- one, the vector worker could): every schema finds it on its search_path (<schema>, public), and
-- dropping a per-test schema never takes the extension with it. A no-op where it is already there.
alter extension vector set schema public;
