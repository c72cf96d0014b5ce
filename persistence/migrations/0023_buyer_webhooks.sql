-- 0023_buyer_webhooks.sql: buyer webhooks (docs/buyer-integration.md, "Webhooks").
--
-- A buyer may register one webhook URL; campaign events (status changes, filled quotas,
-- completion) are POSTed to it, signed with the buyer's api_secret. An event is stored in the
-- postback outbox inside the transaction of the change it announces, so it exists exactly
-- when that change does, and the postback workers deliver it (claims with a lease, retries
-- with backoff, the dead-letter window): one delivery machine for partners and buyers.
--
-- Every step changes the catalog only (no rewrite, no scan): nullable columns without a
-- default, DROP NOT NULL, and constraints added NOT VALID (every existing row is a partner
-- postback and passes them; new rows are checked all the same). Every step can run twice.
ALTER TABLE buyers ADD COLUMN IF NOT EXISTS webhook_url text;

ALTER TABLE postback_outbox
  ALTER COLUMN publisher_id DROP NOT NULL,
  -- The buyer a webhook row goes to (its api_secret signs it at delivery); NULL on partner
  -- postbacks, whose publisher_id is set instead.
  ADD COLUMN IF NOT EXISTS buyer_id bigint,
  -- The exact JSON bytes a webhook POSTs; NULL on partner postbacks (GET, signed URL).
  ADD COLUMN IF NOT EXISTS body bytea,
  DROP CONSTRAINT IF EXISTS postback_outbox_buyer_fk,
  DROP CONSTRAINT IF EXISTS postback_outbox_recipient,
  ADD CONSTRAINT postback_outbox_buyer_fk FOREIGN KEY (buyer_id) REFERENCES buyers(id) NOT VALID,
  ADD CONSTRAINT postback_outbox_recipient CHECK ((publisher_id IS NULL) <> (buyer_id IS NULL)) NOT VALID,
  DROP CONSTRAINT IF EXISTS postback_outbox_kind_check,
  ADD CONSTRAINT postback_outbox_kind_check CHECK (kind IN ('outcome', 'reversal', 'acceptance', 'webhook')) NOT VALID;
