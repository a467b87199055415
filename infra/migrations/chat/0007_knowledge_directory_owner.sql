-- Knowledge directories remember who made them: Open WebUI 0.10.2's KnowledgeDirectoryModel has a
-- required user_id (a write grantee's directory is theirs, in the owner's knowledge base). Rows
-- made before this file get the knowledge base's owner.
alter table knowledge_directory add column user_id text;
update knowledge_directory d set user_id = k.user_id from knowledge k where k.id = d.knowledge_id;
alter table knowledge_directory alter column user_id set not null;
