-- 0028_reroute.sql: re-routing of screen-outs (docs/rules.md §10). A publisher's
-- reroute_attempts (0 = off, the default; at most 5) is how many times a chain may continue
-- to another survey. A chain is stored once; each of its sessions names it and its hop
-- (1 = the offer entry). The partial unique index makes a hop's session unique, so a
-- replayed callback can never admit a second session for the same hop. Adding columns with a
-- constant default, or nullable ones, changes only the catalog; the index is built over rows
-- that all have chain_id NULL (none indexed), one scan of sessions under a brief write lock.
ALTER TABLE publishers ADD COLUMN reroute_attempts smallint NOT NULL DEFAULT 0
	CHECK (reroute_attempts BETWEEN 0 AND 5);

CREATE TABLE reroute_chains (
  id bigserial PRIMARY KEY,
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  participant_id bigint NOT NULL REFERENCES participants(id),
  device_type smallint NOT NULL,        -- the offer's device (supply's device_type)
  device_id text NOT NULL DEFAULT '',
  started_at timestamptz NOT NULL DEFAULT now(),
  reroutes smallint NOT NULL DEFAULT 0, -- continuations used (each counts against reroute_attempts)
  tried bigint[] NOT NULL DEFAULT '{}', -- campaigns tried: its sessions' and refused entries'
  ended_at timestamptz,
  end_reason text
);

ALTER TABLE sessions ADD COLUMN chain_id bigint REFERENCES reroute_chains(id), ADD COLUMN chain_hop smallint;
CREATE UNIQUE INDEX sessions_chain_hop ON sessions (chain_id, chain_hop) WHERE chain_id IS NOT NULL;
