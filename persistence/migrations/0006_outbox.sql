-- 0006_outbox.sql: the durable outbox of partner postbacks (docs/rules.md §7).
--
-- A row is written inside the same transaction as the outcome (callback), the rejection or
-- the reconciliation it announces, so it exists exactly when that change does. Workers in
-- every serve process claim due rows with FOR UPDATE SKIP LOCKED, push next_attempt_at one
-- lease ahead while they deliver, and record the result. Delivery is at-least-once; the
-- partner dedupes on tid (and status).
CREATE TABLE postback_outbox (
  id bigserial PRIMARY KEY,
  tid text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('outcome', 'reversal')),
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  -- The complete, signed GET URL. It carries a signature, never the secret itself.
  url text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  attempts int NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error text,
  delivered_at timestamptz,
  dead_at timestamptz,
  -- The idempotency key: enqueueing the same postback again is a no-op.
  UNIQUE (tid, kind)
);

-- What the workers scan: rows still owed, by due time.
CREATE INDEX postback_outbox_due ON postback_outbox (next_attempt_at)
  WHERE delivered_at IS NULL AND dead_at IS NULL;
-- The dead letters an operator looks at (and /metrics counts).
CREATE INDEX postback_outbox_dead ON postback_outbox (dead_at) WHERE dead_at IS NOT NULL;
