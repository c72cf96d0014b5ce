-- 0039_campaigns_engine_epoch.sql: each campaign records the engine epoch of its last change
-- (NotifyCampaigns sets it with the NOTIFY), so that a serve process's periodic safety check
-- re-reads the campaigns changed since its last look rather than the whole market: at
-- 100,000 campaigns a full load was seconds of CPU and a second index in memory, every
-- minute while any campaign changed. A column with a constant default rewrites no row.
ALTER TABLE campaigns ADD COLUMN engine_epoch bigint NOT NULL DEFAULT 0;
