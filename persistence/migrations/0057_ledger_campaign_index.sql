-- switchboard:no-transaction
-- 0057_ledger_campaign_index.sql: the console's campaign list shows each campaign's spend,
-- the sum of its ledger events' charges (README.md, "Console"). The ledger has
-- no index by campaign; this one holds the charge too, so a campaign's sum is read from the
-- index alone (the ledger is insert-only: its pages are all-visible once vacuumed). Built
-- without blocking the callbacks that write the ledger.
DROP INDEX CONCURRENTLY IF EXISTS ledger_events_campaign;

CREATE INDEX CONCURRENTLY ledger_events_campaign ON ledger_events (buyer_id, campaign_id) INCLUDE (charge_usd);
