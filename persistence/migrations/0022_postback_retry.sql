-- 0022_postback_retry.sql: operators retry dead-lettered postbacks (switchboard postbacks
-- retry). A retried row gets a fresh retry window counted from retried_at, so created_at
-- keeps recording when the postback was enqueued. Adding a nullable column without a default
-- changes only the catalog: no rewrite, no scan, a brief lock.
ALTER TABLE postback_outbox ADD COLUMN retried_at timestamptz;
