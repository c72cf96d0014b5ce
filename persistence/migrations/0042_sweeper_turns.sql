-- 0042_sweeper_turns.sql: the fleet's sweeper takes turns. Every serve process ticks its
-- sweeper every 30 s; each tick claims the turn here first, so that the processes sharing
-- the database sweep once a period between them instead of once each (each sweep reads every
-- active campaign and its quotas: about 0.1 s of PostgreSQL at 100,000 campaigns). turn
-- counts the sweeps: the broken-link check's rotating slice follows it, so the fleet walks
-- the slices in order.
CREATE TABLE IF NOT EXISTS sweeper_turns (
  name text PRIMARY KEY,
  turn bigint NOT NULL DEFAULT 0,
  at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO sweeper_turns (name) VALUES ('sweep') ON CONFLICT (name) DO NOTHING;
