-- 0033_serve_processes.sql: one row per running serve process, its heartbeat: what its
-- engine snapshot holds and how old it is, for the console's operator view. Each process
-- upserts its row about every 10 s and deletes it on a clean shutdown; a row whose
-- updated_at stops moving is a process that died or lost the database (readers show it as
-- stale and leave it; `DELETE FROM serve_processes WHERE updated_at < ...` clears them).
CREATE TABLE serve_processes (
  id text PRIMARY KEY,
  addr text NOT NULL,
  version text NOT NULL,
  started_at timestamptz NOT NULL,
  snapshot_at timestamptz,
  campaigns integer NOT NULL CHECK (campaigns >= 0),
  participants integer NOT NULL CHECK (participants >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);
