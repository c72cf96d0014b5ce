-- switchboard:no-transaction
-- 0037_outbox_retention.sql: delivered postbacks and webhooks leave the outbox after a
-- retention window (DB.PurgeDeliveredOutbox, run by the sweeper; docs/operations.md, "A
-- year of sessions"). The purge reads them by delivery time through this index, built
-- without blocking writes. A delivery already updates an indexed column (delivered_at is in
-- postback_outbox_due's predicate), so it gains one index entry, not a heap rewrite.
DROP INDEX CONCURRENTLY IF EXISTS postback_outbox_delivered;

CREATE INDEX CONCURRENTLY postback_outbox_delivered ON postback_outbox (delivered_at)
  WHERE delivered_at IS NOT NULL;
