-- 0052_ledger.sql: the money ledger (docs/payouts.md, "Ledger").
--
-- Every movement of money is one row, written in the transaction of the change that causes
-- it (a callback's outcome, a rejection, a reconcile's acceptance or rejection) and never
-- changed afterwards. Amounts are ten-thousandths of a USD: the buyer's charge, the
-- partner's earning and the exchange's margin, which balance (charge = earning + margin);
-- reward is the partner's earning in its own currency units, as the redirect's reward. An
-- event is session_id's seq-th (1, 2, ...); its public id, which the partner's postback
-- carries as event_id, is <tid>.<seq>.
CREATE TABLE ledger_events (
  session_id bigint NOT NULL,
  seq smallint NOT NULL CHECK (seq > 0),
  tid text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('complete', 'screenout', 'reversal', 'acceptance')),
  campaign_id bigint NOT NULL,
  buyer_id bigint NOT NULL,
  publisher_id bigint,
  charge_usd bigint NOT NULL,
  earning_usd bigint NOT NULL,
  margin_usd bigint NOT NULL,
  reward bigint NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, seq),
  CHECK (charge_usd = earning_usd + margin_usd)
);
-- Events arrive in time order: a BRIN index finds a month at almost no cost per insert.
CREATE INDEX ledger_events_at ON ledger_events USING brin (at);

-- Immutable: an event is corrected by a later event, never by changing it.
CREATE FUNCTION ledger_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_events rows are immutable';
END $$;
CREATE TRIGGER ledger_events_immutable BEFORE UPDATE OR DELETE ON ledger_events
  FOR EACH ROW EXECUTE FUNCTION ledger_events_immutable();

-- A postback tells the partner of one ledger event (event_id, <tid>.<seq>; NULL on buyer
-- webhooks): a complete rejected, accepted again and rejected again sends a reversal, a
-- completion and a reversal, each its own row. The idempotency key moves from (tid, kind)
-- to event_id: one unique index replaces the other, so a callback's postback insert
-- maintains as many indexes as before. The new column is nullable (a change of the catalog
-- alone); the partial index is built over rows that all have event_id NULL (none indexed),
-- one scan of the outbox under a brief write lock.
ALTER TABLE postback_outbox DROP CONSTRAINT IF EXISTS postback_outbox_tid_kind_key,
  ADD COLUMN IF NOT EXISTS event_id text;
CREATE UNIQUE INDEX IF NOT EXISTS postback_outbox_event ON postback_outbox (event_id) WHERE event_id IS NOT NULL;
