-- 0012_session_references.sql: no per-row foreign-key checks on the hottest inserts
-- (docs/performance.md, "Entries and callbacks").
--
-- Every entry inserts a session and every callback a postback row. Their foreign keys to
-- buyers, publishers and participants were checked row by row, and each check locked the
-- referenced row (FOR KEY SHARE), which writes to its page: on every entry, a write to a
-- random page of participants. In the bench market these checks cost about 45 µs of
-- PostgreSQL time per entry, a tenth of it.
--
-- Nothing deletes buyers, publishers or participants, and the writers take these ids from
-- rows they have just read: the campaign's buyer (admission reads it), the publisher of a
-- verified offer token (looked up before admission), the participant of the panel. The
-- reference to the campaign stays: deleting a campaign still deletes its sessions.
ALTER TABLE sessions
  DROP CONSTRAINT IF EXISTS sessions_buyer_id_fkey,
  DROP CONSTRAINT IF EXISTS sessions_publisher_id_fkey,
  DROP CONSTRAINT IF EXISTS sessions_participant_id_fkey;
ALTER TABLE postback_outbox
  DROP CONSTRAINT IF EXISTS postback_outbox_publisher_id_fkey;
