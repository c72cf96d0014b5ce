-- 0034_buyer_previous_secret.sql: switchboard buyer rotate-secret keeps the secret it
-- replaced, which still verifies the buyer's callbacks until previous_secret_until (the
-- rotation's grace period), so that callbacks signed before the buyer switched keep working.
ALTER TABLE buyers ADD COLUMN previous_api_secret text, ADD COLUMN previous_secret_until timestamptz;
