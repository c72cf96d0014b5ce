-- switchboard:no-transaction
-- 0040_campaigns_engine_epoch_index.sql: the safety check's lookup of the campaigns changed
-- since an epoch (DB.CampaignsChangedSince), built without blocking writes to campaigns.
DROP INDEX CONCURRENTLY IF EXISTS campaigns_engine_epoch;

CREATE INDEX CONCURRENTLY campaigns_engine_epoch ON campaigns (engine_epoch);
