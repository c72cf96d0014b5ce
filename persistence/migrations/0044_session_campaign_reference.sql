-- 0044_session_campaign_reference.sql: no per-row foreign-key check of the session's
-- campaign (docs/performance.md, "The session's campaign reference").
--
-- Every admitted entry inserts a session, and its foreign key to campaigns was checked row
-- by row: a query per session that locks the campaign's row (FOR KEY SHARE), writing to
-- its page and, when batches entering the same campaign overlap, a multixact. A quota
-- filling fast is exactly many entries into one campaign at once. The admission takes the
-- campaign id from the campaign row its checks just read, and nothing deletes campaigns
-- (they are closed, archived, never removed), so the check proves nothing the writer does
-- not know; the cascade it carried has nothing to cascade. The same reasons dropped the
-- session's other references in 0012. Dropping the constraint changes only the catalog:
-- the exclusive lock on sessions and its partitions is held for milliseconds once granted,
-- and waited for at most 5 s (a long export reading sessions would otherwise hold every
-- entry queued behind the request); past that the migration fails whole and runs again at
-- the next start, as 0036's locking step does.
SET LOCAL lock_timeout = '5s';
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_campaign_id_fkey;
