-- 0047_session_clock.sql: where the sessions' id sequence stood, reading by reading
-- (docs/architecture.md, "Sweeper").
--
-- The sweeper reads each campaign holding places from its mark in id order, and a session
-- is released once its callback window (2 × LOI + 10 minutes) has passed. Without a bound
-- on that read, every sweep read again, per campaign, the sessions still inside their
-- window (up to its limit of 5,000 each): at a marketplace's entry rates most of what it
-- read. Each release first records here the sequence's next id and the time; a campaign's
-- read then stops below the next id of the earliest reading within its window, above which
-- every session was drawn, so entered, inside the window.
CREATE TABLE IF NOT EXISTS session_clock (
  at timestamptz PRIMARY KEY,
  next_id bigint NOT NULL
);
