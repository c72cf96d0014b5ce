-- 0015_money_bigint.sql: money columns wide enough for every reward and payout
-- (docs/rules.md §7, money bounds).
--
-- sessions.reward was int: a complete of a 9,999 USD campaign for a publisher paid the
-- whole cpi at 1e9 in-app units per USD is worth 9.999e12 units, and storing it failed
-- (22003, integer out of range) on every callback, so the session never got its outcome.
-- bigint holds the largest reward the validated inputs allow (10,000 USD × 1 × 1e9 = 1e13)
-- and even the largest the columns themselves admit (cpi_cents int × revenue_share ≤ 1 ×
-- exchange_rate numeric(14,4) < 2.2e17). payout_usd numeric(10,4) held at most
-- 999,999.9999 USD; numeric(14,4) holds cpi × share for any int cpi_cents. cpi_cents stays
-- int: bids are at most 1,000,000 cents and the rate card's prices are far below.
--
-- The type change of reward rewrites sessions under an exclusive lock (widening numeric's
-- precision alone would not); callbacks and entries wait for it. On a large deployment run
-- `switchboard migrate` in a quiet window.
ALTER TABLE sessions
  ALTER COLUMN reward TYPE bigint,
  ALTER COLUMN payout_usd TYPE numeric(14,4);
