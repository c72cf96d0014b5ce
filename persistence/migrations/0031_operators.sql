-- 0031_operators.sql: operators sign in to the web console's operator view (switchboard
-- operator create). Only the SHA-256 of an operator's token is kept; the token is printed
-- once.
CREATE TABLE operators (
  id bigserial PRIMARY KEY,
  name text NOT NULL,
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);
