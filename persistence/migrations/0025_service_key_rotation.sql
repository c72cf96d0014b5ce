-- 0025_service_key_rotation.sql: service keys rotate (`switchboard keys rotate`).
--
-- service_keys holds each key's current bytes (0004 said rows never change; a rotation now
-- replaces them). The bytes a rotation replaced are kept here: every serve process still
-- verifies offer-entry, profiler and support tokens signed under them for the tokens'
-- lifetime (docs/rules.md §6: 30 minutes) plus a grace, then retires them. Rows older than a
-- day are deleted by the next rotation.
CREATE TABLE service_keys_previous (
  name text NOT NULL,
  key bytea NOT NULL CHECK (length(key) >= 32),
  superseded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (name, superseded_at)
);
