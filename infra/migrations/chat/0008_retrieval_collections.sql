-- Retrieval (issue 11, search): /api/v1/retrieval/process/text makes a collection that is no
-- knowledge base and no `file-<id>`: its name (the content's SHA-256 unless the client named it)
-- is kept in the file's meta as Open WebUI's collection_name. Queries naming such a collection
-- find its file through this index instead of reading every file's meta.
create index file_collection_name on file ((meta ->> 'collection_name'));
