-- switchboard:no-transaction
-- 0056_change_xid_index.sql: a snapshot's catch-up reads the campaigns and participants
-- changed since its position (DB.CampaignsChangedAt, DB.ParticipantsChangedAt) through
-- these, built without blocking writes.
DROP INDEX CONCURRENTLY IF EXISTS campaigns_change_xid;
CREATE INDEX CONCURRENTLY campaigns_change_xid ON campaigns (change_xid);
DROP INDEX CONCURRENTLY IF EXISTS participants_change_xid;
CREATE INDEX CONCURRENTLY participants_change_xid ON participants (change_xid);
