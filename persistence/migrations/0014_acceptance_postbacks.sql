-- 0014_acceptance_postbacks.sql: a third postback kind, 'acceptance' (docs/rules.md §7, §8;
-- docs/payouts.md, "Reconcile acceptances").
--
-- A reconcile that lists a session which is not an accepted complete (another outcome, none
-- yet, or a rejected complete) makes it one, and the partner is owed a status=complete
-- postback with the complete's payout. Its outbox row cannot be of kind 'outcome': a session
-- with a callback has that row already, and (tid, kind) is the idempotency key.
--
-- 0006 declared the check inline, so PostgreSQL named it postback_outbox_kind_check. It is
-- dropped if present and added again under the same name, so the step can run twice. The
-- new check is NOT VALID: every existing row passed the old, narrower one, and validating
-- would read the whole outbox (delivered rows are kept) under this ALTER's exclusive lock,
-- stalling every callback's postback insert meanwhile. New rows are checked all the same.
ALTER TABLE postback_outbox
  DROP CONSTRAINT IF EXISTS postback_outbox_kind_check,
  ADD CONSTRAINT postback_outbox_kind_check CHECK (kind IN ('outcome', 'reversal', 'acceptance')) NOT VALID;
