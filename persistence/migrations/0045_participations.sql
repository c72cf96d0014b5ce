-- switchboard:no-transaction
-- 0045_participations.sql: participations, the latest entry of each participant into each
-- campaign, which the admission's reentry, relationship and offer-resume checks read
-- instead of the partitions of sessions (docs/architecture.md, "Entry (the arbiter)";
-- docs/performance.md, "Participations").
--
-- The checks probed sessions by (participant_id, campaign_id) in four subqueries, and a
-- partitioned table makes every execution set up a scan of every partition for each of them
-- (the probes' floors depend on the row, so nothing is pruned when the plan starts): about
-- half a millisecond per batch at 13 partitions, growing with every month of history. One
-- row per (campaign, participant) answers each rule with one probe of one index, whatever
-- the history's length.
--
-- A statement trigger on sessions keeps it: every INSERT into sessions (an entry's batch, a
-- test session, an import, a process of the release before this one during a rolling
-- upgrade) upserts the latest session of each (campaign, participant) it stored, in the same
-- transaction. Test sessions and sessions without a participant are not entries and are
-- left out. A row only moves forward (to a session entered later; of two entered at the
-- same time, the larger id), so the trigger and the backfill below may run in any order and
-- any number of times.
--
-- Steps, each its own transaction, each safe to repeat:
--   1. the table;
--   2. the triggers (CREATE OR REPLACE TRIGGER waits at most 5 s for its brief lock on
--      sessions; from their commit on, every new or changed session is recorded);
--   3. the backfill: every session stored before, in ranges of 2^20 ids, one transaction
--      each (entries and callbacks go on; at 10M sessions about a minute, docs/operations.md);
--   4. ANALYZE, when it holds rows.
-- The checks of this release read participations only once the migration is recorded,
-- that is after the backfill.
CREATE TABLE IF NOT EXISTS participations (
  campaign_id bigint NOT NULL,
  participant_id bigint NOT NULL,
  entered_at timestamptz NOT NULL,
  session_id bigint NOT NULL,
  offer_nonce bigint,
  PRIMARY KEY (campaign_id, participant_id)
);

CREATE OR REPLACE FUNCTION switchboard_record_participations() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO participations AS pp (campaign_id, participant_id, entered_at, session_id, offer_nonce)
  SELECT DISTINCT ON (n.campaign_id, n.participant_id) n.campaign_id, n.participant_id, n.entered_at, n.id, n.offer_nonce
  FROM new_sessions n WHERE NOT n.is_test AND n.participant_id IS NOT NULL
  ORDER BY n.campaign_id, n.participant_id, n.entered_at DESC, n.id DESC
  ON CONFLICT (campaign_id, participant_id) DO UPDATE
    SET entered_at = excluded.entered_at, session_id = excluded.session_id, offer_nonce = excluded.offer_nonce
    WHERE (pp.entered_at, pp.session_id) < (excluded.entered_at, excluded.session_id);
  RETURN NULL;
END $$;

-- Nothing in the service changes a stored session's campaign, participant, entry time or
-- test flag, or deletes one; a repair by hand (or a test moving an entry back in time) may.
-- For those rows the pair's participation is computed again from its sessions. Callbacks
-- and the sweeper set none of these columns, so the trigger never fires for them.
CREATE OR REPLACE FUNCTION switchboard_recompute_participation() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT OLD.campaign_id AS c, OLD.participant_id AS p
    UNION SELECT NEW.campaign_id, NEW.participant_id WHERE TG_OP = 'UPDATE' LOOP
    CONTINUE WHEN r.p IS NULL;
    DELETE FROM participations WHERE campaign_id = r.c AND participant_id = r.p;
    INSERT INTO participations (campaign_id, participant_id, entered_at, session_id, offer_nonce)
    SELECT s.campaign_id, s.participant_id, s.entered_at, s.id, s.offer_nonce FROM sessions s
    WHERE s.campaign_id = r.c AND s.participant_id = r.p AND NOT s.is_test
    ORDER BY s.entered_at DESC, s.id DESC LIMIT 1;
  END LOOP;
  RETURN NULL;
END $$;

DO $$
BEGIN
  PERFORM set_config('lock_timeout', '5s', true);
  CREATE OR REPLACE TRIGGER sessions_participations AFTER INSERT ON sessions
    REFERENCING NEW TABLE AS new_sessions FOR EACH STATEMENT EXECUTE FUNCTION switchboard_record_participations();
  CREATE OR REPLACE TRIGGER sessions_participation_changed AFTER UPDATE OF campaign_id, participant_id, entered_at, is_test ON sessions
    FOR EACH ROW WHEN (OLD.campaign_id IS DISTINCT FROM NEW.campaign_id OR OLD.participant_id IS DISTINCT FROM NEW.participant_id
      OR OLD.entered_at IS DISTINCT FROM NEW.entered_at OR OLD.is_test IS DISTINCT FROM NEW.is_test)
    EXECUTE FUNCTION switchboard_recompute_participation();
  CREATE OR REPLACE TRIGGER sessions_participation_deleted AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION switchboard_recompute_participation();
END $$;

DO $$
DECLARE
  lo bigint;
  top bigint;
BEGIN
  SELECT coalesce(min(id), 0), coalesce(max(id), -1) INTO lo, top FROM sessions;
  WHILE lo <= top LOOP
    INSERT INTO participations AS pp (campaign_id, participant_id, entered_at, session_id, offer_nonce)
    SELECT DISTINCT ON (s.campaign_id, s.participant_id) s.campaign_id, s.participant_id, s.entered_at, s.id, s.offer_nonce
    FROM sessions s WHERE s.id >= lo AND s.id < lo + 1048576 AND NOT s.is_test AND s.participant_id IS NOT NULL
    ORDER BY s.campaign_id, s.participant_id, s.entered_at DESC, s.id DESC
    ON CONFLICT (campaign_id, participant_id) DO UPDATE
      SET entered_at = excluded.entered_at, session_id = excluded.session_id, offer_nonce = excluded.offer_nonce
      WHERE (pp.entered_at, pp.session_id) < (excluded.entered_at, excluded.session_id);
    COMMIT;
    lo := lo + 1048576;
  END LOOP;
END $$;

-- Statistics once it holds rows; an empty table is left unanalyzed, so that the planner
-- assumes a few pages and probes it by index rather than trusting "no rows" (the analyzer
-- of every serve process analyzes it once it takes 1,000 rows: planstats.go).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM participations) THEN
    ANALYZE participations;
  END IF;
END $$;
