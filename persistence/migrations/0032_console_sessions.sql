-- 0032_console_sessions.sql: a signed-in web console browser, either a buyer's or an
-- operator's. Only the SHA-256 of the session id (the cookie's value) is kept, so a copy of
-- the table signs nobody in. A session ends at expires_at, at sign-out, and with the buyer
-- token it was signed in with (revoked or rotated: the row goes with it).
CREATE TABLE console_sessions (
  id_hash bytea PRIMARY KEY,
  buyer_id bigint REFERENCES buyers(id) ON DELETE CASCADE,
  buyer_token_id bigint REFERENCES buyer_tokens(id) ON DELETE CASCADE,
  operator_id bigint REFERENCES operators(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  CHECK ((buyer_id IS NULL) <> (operator_id IS NULL)),
  CHECK ((buyer_id IS NULL) = (buyer_token_id IS NULL))
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
