-- 0004_supply.sql: what the supply interface needs beyond the base schema.

-- Per-deployment secrets shared by every serve process, e.g. the key that signs offer-entry
-- tokens ('entry'). Rows are inserted on first start (random bytes from the process) and
-- never change afterwards.
CREATE TABLE service_keys (
  name text PRIMARY KEY,
  key bytea NOT NULL CHECK (length(key) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The start-up load of the panel reads participants active in the last 30 days.
CREATE INDEX participants_last_active ON participants (last_active_at);
