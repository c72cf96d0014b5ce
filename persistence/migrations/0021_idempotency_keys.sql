-- 0021_idempotency_keys.sql: a buyer's Idempotency-Key on a create (campaigns, quotas) remembers
-- the first 2xx answer for 24 hours, so a retried request gets that answer again instead of a
-- second row. status 0 marks a claim whose create is still running.
CREATE TABLE idempotency_keys (
  buyer_id bigint NOT NULL REFERENCES buyers(id) ON DELETE CASCADE,
  route text NOT NULL,
  key text NOT NULL,
  body_sha256 bytea NOT NULL,
  status int NOT NULL DEFAULT 0,
  response bytea,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (buyer_id, route, key)
);
