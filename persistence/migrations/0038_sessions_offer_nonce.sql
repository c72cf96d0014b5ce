-- 0038_sessions_offer_nonce.sql: an entry link followed twice is one entry. A browser
-- resends a GET whose answer it lost (the process that admitted it died before answering, a
-- proxy closed the connection), and people double-click. The session remembers the nonce of
-- the offer token it was admitted from; the arbiter answers a second entry of the same offer,
-- while that session is still in progress, with the same session instead of taking a second
-- place in the quota (docs/rules.md §6). Adding a nullable column rewrites no partition.
ALTER TABLE sessions ADD COLUMN offer_nonce bigint;
