-- 0046_hot_sessions.sql: a callback's update of its session can be a HOT update
-- (docs/architecture.md, "Callbacks rewrite no index"; docs/performance.md, "HOT callbacks").
--
-- A callback sets outcome, outcome_at, payout_usd and reward; the sweeper sets released_at.
-- Two partial indexes name outcome or released_at in their predicate, sessions_waiting (the
-- sweeper's sessions in progress) and sessions_campaign_complete (a campaign's completes),
-- and an update that changes a column any index names is never HOT: the new version of the
-- row gets an entry in every index of its partition, five of them per callback. Without
-- those two indexes, and with room left in each page for the new version (fillfactor 80),
-- a callback writes the row's page and no index at all.
--
-- This release no longer reads either index: the sweeper finds a campaign's sessions whose
-- callback window has passed from where its last sweep of that campaign stopped
-- (session_sweep_marks, through the campaign's index on (campaign_id, id)), and a campaign's
-- completes are its sessions filtered by outcome. The release before reads them, so they are
-- not dropped here: the sweeper of this release drops them once every serve process alive
-- runs a release that knows this migration (serve_processes.schema, written with each
-- heartbeat; a process of the release before writes none), DB.RetireSessionIndexes.

SET LOCAL lock_timeout = '5s';

-- The newest migration of the process's binary, NULL from a binary before this one.
ALTER TABLE serve_processes ADD COLUMN IF NOT EXISTS schema integer;

-- Per campaign, the lowest session id the sweeper has not looked at since its callback
-- window passed: every session of the campaign below it has an outcome, was released, or
-- is a test session.
CREATE TABLE IF NOT EXISTS session_sweep_marks (
  campaign_id bigint PRIMARY KEY,
  next_id bigint NOT NULL
);

-- Every campaign starts at its lowest session in progress (read through sessions_waiting,
-- which is still there), or a block of ids below the sequence's end for one with none: a
-- session whose id was drawn before this migration and that commits after it lies above.
INSERT INTO session_sweep_marks (campaign_id, next_id)
SELECT c.id, LEAST(COALESCE(w.first, h.top), h.top)
FROM campaigns c
CROSS JOIN (SELECT GREATEST((SELECT last_value FROM sessions_id_seq) - 1048576, 0) AS top) h
LEFT JOIN (SELECT campaign_id, min(id) AS first FROM sessions
  WHERE outcome IS NULL AND released_at IS NULL AND NOT is_test GROUP BY campaign_id) w ON w.campaign_id = c.id
ON CONFLICT (campaign_id) DO NOTHING;

-- Partitions keep a fifth of each page free for the new versions of its rows. New ones
-- are created so (below); the partition being filled and those ahead of it are altered
-- (their pages from now on; ALTER TABLE ... SET takes a lock that lets reads and writes go
-- on). Older partitions are left as they are: their sessions have their outcomes.
CREATE OR REPLACE FUNCTION switchboard_add_session_partition(lo bigint, hi bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  part text := 'sessions_p' || lo;
BEGIN
  IF EXISTS (SELECT 1 FROM session_partitions WHERE name = part) THEN
    RETURN part;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE sessions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) WITH (fillfactor = 80)', part);
  EXECUTE format('CREATE UNIQUE INDEX %I ON %I (tid)', part || '_tid', part);
  EXECUTE format('CREATE UNIQUE INDEX %I ON %I (chain_id, chain_hop) WHERE chain_id IS NOT NULL', part || '_chain_hop', part);
  EXECUTE format('ALTER TABLE sessions ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, hi);
  INSERT INTO session_partitions (name, id_from, id_to) VALUES (part, lo, hi);
  RETURN part;
END $$;

DO $$
DECLARE
  p record;
BEGIN
  FOR p IN SELECT name FROM session_partitions WHERE id_to > (SELECT last_value FROM sessions_id_seq) ORDER BY id_from LOOP
    EXECUTE format('ALTER TABLE %I SET (fillfactor = 80)', p.name);
  END LOOP;
END $$;
