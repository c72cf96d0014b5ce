-- switchboard:no-transaction
-- 0036_sessions_partitioned.sql: sessions becomes a table partitioned by RANGE (id), so that a
-- year of sessions (about 100M rows at 1M a day) is a dozen tables of a month each rather
-- than one (docs/operations.md, "A year of sessions"; docs/performance.md, "A year of
-- sessions (issue 14 item 6)").
--
-- Why id and not entered_at: id is a bigserial that only grows, so ranges of id are periods
-- of time (session_partitions records the entered_at range each one covers), and id stays
-- the primary key: a unique index of a partitioned table must contain its partition key, and
-- screener_answers and prescreen_responses reference sessions(id). By entered_at, the key
-- would have to become (id, entered_at) and those references would need an entered_at column
-- each. tid and (chain_id, chain_hop) cannot be unique across a table partitioned by id:
-- each partition has its own unique index on them (tids are 128 random bits; a chain lives
-- at most an hour, see persistence/reroute.go).
--
-- The conversion of an existing table holds an exclusive lock only for catalog changes:
--   1. CHECK (id < bound) NOT VALID on the old table, bound well above the sequence;
--   2. VALIDATE it: a scan under SHARE UPDATE EXCLUSIVE, entries and callbacks go on;
--   3. one short transaction (lock_timeout 5 s; a failure rolls it back and the file runs
--      again): rename the old table to sessions_p0, create the partitioned sessions with the
--      same columns and indexes (empty, so built at once), attach sessions_p0 (its CHECK
--      proves the range, so no scan; its indexes match the parent's and are attached, not
--      built), hand it the sequence, move the sequence to bound, attach an empty partition
--      from bound up;
--   4. the references to sessions from screener_answers and prescreen_responses are added
--      again to the partitioned table NOT VALID, then validated (SHARE UPDATE EXCLUSIVE).
-- Every statement checks what is done, so a failed run repeats safely.

-- The partitions and the entered_at range each holds (recorded by
-- switchboard_ensure_session_partitions; first/last: the entered_at of its lowest and
-- highest id).
CREATE TABLE IF NOT EXISTS session_partitions (
  name text PRIMARY KEY,
  id_from bigint NOT NULL,
  id_to bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  first_entered_at timestamptz,
  last_entered_at timestamptz,
  CHECK (id_from < id_to)
);

-- switchboard_add_session_partition creates the empty partition [lo, hi) of sessions with
-- its own unique indexes, then attaches it: ATTACH PARTITION locks sessions in SHARE UPDATE
-- EXCLUSIVE mode (reads and writes go on), where CREATE TABLE ... PARTITION OF would lock it
-- exclusively. The parent's indexes and foreign keys are created on the empty table.
CREATE OR REPLACE FUNCTION switchboard_add_session_partition(lo bigint, hi bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  part text := 'sessions_p' || lo;
BEGIN
  IF EXISTS (SELECT 1 FROM session_partitions WHERE name = part) THEN
    RETURN part;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE sessions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', part);
  EXECUTE format('CREATE UNIQUE INDEX %I ON %I (tid)', part || '_tid', part);
  EXECUTE format('CREATE UNIQUE INDEX %I ON %I (chain_id, chain_hop) WHERE chain_id IS NOT NULL', part || '_chain_hop', part);
  EXECUTE format('ALTER TABLE sessions ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, lo, hi);
  INSERT INTO session_partitions (name, id_from, id_to) VALUES (part, lo, hi);
  RETURN part;
END $$;

-- switchboard_ensure_session_partitions keeps `ahead` empty partitions above the sequence,
-- each sized to hold `period` of sessions at the rate of the partition being filled (at
-- least min_span ids), and records the entered_at range of every partition. Processes take
-- turns (an advisory lock). It returns the partitions it created.
CREATE OR REPLACE FUNCTION switchboard_ensure_session_partitions(period interval, ahead int, min_span bigint)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  cur bigint;
  top bigint;
  span bigint := min_span;
  p record;
  lo timestamptz;
  hi timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(7300451036);
  SELECT last_value INTO cur FROM sessions_id_seq;
  FOR p IN SELECT name, id_from FROM session_partitions WHERE id_from <= cur ORDER BY id_from LOOP
    EXECUTE format('SELECT (SELECT entered_at FROM %1$I ORDER BY id LIMIT 1), (SELECT entered_at FROM %1$I ORDER BY id DESC LIMIT 1)', p.name)
      INTO lo, hi;
    UPDATE session_partitions SET first_entered_at = lo, last_entered_at = hi
      WHERE name = p.name AND (first_entered_at IS DISTINCT FROM lo OR last_entered_at IS DISTINCT FROM hi);
  END LOOP;
  -- The rate: ids per second in the partition being filled, once it spans an hour; before,
  -- in the one before it.
  SELECT greatest(min_span, ((s.ids::numeric / extract(epoch FROM s.took)) * extract(epoch FROM period))::bigint) INTO span
  FROM (SELECT least(cur, id_to) - id_from AS ids, last_entered_at - first_entered_at AS took
        FROM session_partitions WHERE id_from <= cur AND last_entered_at - first_entered_at >= interval '1 hour'
        ORDER BY id_from DESC LIMIT 1) s;
  span := coalesce(span, min_span);
  SELECT max(id_to) INTO top FROM session_partitions;
  WHILE (SELECT count(*) FROM session_partitions WHERE id_from > cur) < ahead LOOP
    RETURN NEXT switchboard_add_session_partition(top, top + span);
    top := top + span;
  END LOOP;
END $$;

-- 1. The bound of the old table: its sequence plus ten million ids (a margin for the entries
-- taken while step 2 scans). Set again when an earlier run left one the sequence came near.
DO $$
DECLARE
  bound bigint;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'sessions'::regclass) = 'p' THEN
    RETURN;
  END IF;
  SELECT id_to INTO bound FROM session_partitions WHERE name = 'sessions_p0';
  IF bound IS NOT NULL AND bound - (SELECT last_value FROM sessions_id_seq) >= 5000000 THEN
    RETURN;
  END IF;
  SET LOCAL lock_timeout = '5s';
  bound := (SELECT last_value FROM sessions_id_seq) + 10000000;
  ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_p0_bound;
  EXECUTE format('ALTER TABLE sessions ADD CONSTRAINT sessions_p0_bound CHECK (id >= 1 AND id < %s) NOT VALID', bound);
  DELETE FROM session_partitions WHERE name = 'sessions_p0';
  INSERT INTO session_partitions (name, id_from, id_to) VALUES ('sessions_p0', 1, bound);
END $$;

-- 2. Prove it: a scan that lets entries and callbacks go on.
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'sessions'::regclass) = 'r' THEN
    ALTER TABLE sessions VALIDATE CONSTRAINT sessions_p0_bound;
  END IF;
END $$;

-- 3. The swap, in one short transaction.
DO $$
DECLARE
  bound bigint;
  ix record;
  defs text[] := '{}';
  d text;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'sessions'::regclass) = 'p' THEN
    RETURN;
  END IF;
  SET LOCAL lock_timeout = '5s';
  LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE;
  SELECT id_to INTO bound FROM session_partitions WHERE name = 'sessions_p0';
  IF (SELECT last_value FROM sessions_id_seq) >= bound - 1000 THEN
    RAISE EXCEPTION 'sessions_id_seq came within 1000 of the bound % of sessions_p0 during the scan: run the migration again', bound;
  END IF;
  -- Every index of the old table: the non-unique ones again on the parent (built at once on
  -- the empty table; ATTACH adopts the old ones as its partitions'), the unique ones other
  -- than the primary key kept as sessions_p0's own.
  FOR ix IN SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisunique AS uniq, i.indisprimary AS pk
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'sessions'::regclass LOOP
    IF ix.uniq AND NOT ix.pk AND ix.name NOT IN ('sessions_tid_key', 'sessions_chain_hop') THEN
      RAISE EXCEPTION 'unique index % on sessions: 0036 does not know how to keep it unique per partition', ix.name;
    END IF;
    IF NOT ix.uniq THEN
      defs := defs || ix.def;
    END IF;
    EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.name, 'sessions_p0_' || substr(ix.name, length('sessions_') + 1));
  END LOOP;
  ALTER TABLE sessions RENAME TO sessions_p0;

  CREATE TABLE sessions (LIKE sessions_p0 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY RANGE (id);
  ALTER TABLE sessions DROP CONSTRAINT sessions_p0_bound;
  ALTER TABLE sessions ADD PRIMARY KEY (id);
  FOREACH d IN ARRAY defs LOOP
    EXECUTE d;
  END LOOP;
  -- The old table's references, as 0001, 0012 and 0028 left them.
  ALTER TABLE sessions ADD CONSTRAINT sessions_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id) ON DELETE CASCADE;
  ALTER TABLE sessions ADD CONSTRAINT sessions_chain_id_fkey FOREIGN KEY (chain_id) REFERENCES reroute_chains(id);

  EXECUTE format('ALTER TABLE sessions ATTACH PARTITION sessions_p0 FOR VALUES FROM (MINVALUE) TO (%s)', bound);
  -- (the old table's foreign keys match the parent's: ATTACH adopts them, no scan)
  ALTER TABLE sessions_p0 DROP CONSTRAINT sessions_p0_bound;
  ALTER SEQUENCE sessions_id_seq OWNED BY sessions.id;
  PERFORM setval('sessions_id_seq', bound, false);
  PERFORM switchboard_ensure_session_partitions('30 days', 2, 1000000);

  -- The references to sessions, to the partitioned table; validated by step 4.
  ALTER TABLE screener_answers DROP CONSTRAINT IF EXISTS screener_answers_session_id_fkey;
  ALTER TABLE screener_answers ADD CONSTRAINT screener_answers_session_id_fkey
    FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE NOT VALID;
  ALTER TABLE prescreen_responses DROP CONSTRAINT IF EXISTS prescreen_responses_session_id_fkey;
  ALTER TABLE prescreen_responses ADD CONSTRAINT prescreen_responses_session_id_fkey
    FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE SET NULL NOT VALID;
END $$;

-- 4. Prove the references again: scans that let writes go on.
ALTER TABLE screener_answers VALIDATE CONSTRAINT screener_answers_session_id_fkey;

ALTER TABLE prescreen_responses VALIDATE CONSTRAINT prescreen_responses_session_id_fkey;

-- 5. Statistics of the partitioned table itself, which autovacuum never gathers: without
-- them the planner misestimates every join on sessions (docs/performance.md, "A year of
-- sessions"). A sample of each partition; reads and writes go on.
ANALYZE sessions;
