-- switchboard:no-transaction
-- 0048_outbox_buyer_index.sql: a buyer reads its webhook deliveries, newest first, in any
-- status (GET /api/v1/webhook/deliveries; docs/buyer-integration.md, "Webhooks"). The
-- outbox has no index by recipient, and delivered rows are its bulk: this partial index
-- holds the webhook rows only, by buyer and id, built without blocking writes. Partner
-- postbacks (buyer_id NULL) take no entry, and nothing of a row's meaning changes.
DROP INDEX CONCURRENTLY IF EXISTS postback_outbox_buyer;

CREATE INDEX CONCURRENTLY postback_outbox_buyer ON postback_outbox (buyer_id, id)
  WHERE buyer_id IS NOT NULL;
