-- 0053_ledger_months.sql: closed months and the ledger's history (docs/payouts.md,
-- "Statements" and "History").
--
-- A closed month's statements never change. Its events are immutable (0052) and no event is
-- dated into it once it is closed: closing takes a SHARE lock on ledger_events, which waits
-- for every transaction that is writing an event, and an event that arrives dated into a
-- closed month (an outcome timed by a process's clock just before the month ended, and
-- committed after it closed) is dated by the database's clock instead, so it belongs to the
-- month it is written in. The trigger looks the month up only for an event dated before the
-- current month: a callback's event of the current month costs one comparison.
SET LOCAL lock_timeout = '5s';

-- The totals are summed once the month's row is stored (NULL until then).
CREATE TABLE IF NOT EXISTS ledger_months (
  month date PRIMARY KEY CHECK (extract(day FROM month) = 1),
  closed_at timestamptz NOT NULL DEFAULT now(),
  events bigint,
  charge_usd bigint,
  earning_usd bigint,
  margin_usd bigint
);

CREATE OR REPLACE FUNCTION ledger_events_open_month() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM ledger_months WHERE month = date_trunc('month', NEW.at AT TIME ZONE 'UTC')::date) THEN
    NEW.at := clock_timestamp();
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS ledger_events_open_month ON ledger_events;
CREATE TRIGGER ledger_events_open_month BEFORE INSERT ON ledger_events
  FOR EACH ROW WHEN (NEW.at < date_trunc('month', clock_timestamp() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
  EXECUTE FUNCTION ledger_events_open_month();

-- The history backfill (DB.BackfillLedger) writes the outcome of a session decided without
-- the ledger as its event 0, which no postback carried: the events the partner was told of
-- keep their numbers. The constraint is replaced without a scan (every row has seq > 0).
ALTER TABLE ledger_events DROP CONSTRAINT IF EXISTS ledger_events_seq_check,
  ADD CONSTRAINT ledger_events_seq_check CHECK (seq >= 0) NOT VALID;

-- The backfill's watermark: every session with an id below next_id has been looked at;
-- through is the newest session when this migration ran (an index look-up), which the
-- backfill must pass before a month can close. A database without sessions has no history.
CREATE TABLE IF NOT EXISTS ledger_backfill (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  next_id bigint NOT NULL,
  through bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO ledger_backfill (next_id, through)
  SELECT CASE WHEN m IS NULL THEN 1 ELSE 0 END, COALESCE(m, 0) FROM (SELECT max(id) AS m FROM sessions) s
  ON CONFLICT DO NOTHING;
