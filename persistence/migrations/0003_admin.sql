-- 0003_admin.sql: what the buyer interface (/api/v1) needs beyond 0001.

-- The buyer's own cpi bid in cents, when one was supplied. The campaign's price
-- (cpi_cents) is max(rate card price, bid) and is recomputed from this bid when
-- length_of_interview, incidence or the bid change.
ALTER TABLE campaigns ADD COLUMN cpi_bid_cents int;

CREATE INDEX campaigns_project ON campaigns (project_id, wave_number);
CREATE INDEX campaign_relationships_campaign ON campaign_relationships (campaign_id);
CREATE INDEX campaign_relationships_related ON campaign_relationships (related_campaign_id);
CREATE INDEX adhoc_accounts_buyer ON adhoc_accounts (buyer_id, id);
CREATE INDEX qualifications_custom ON qualifications (buyer_id, question_id) WHERE buyer_id IS NOT NULL;
CREATE INDEX campaign_qualifications_question ON campaign_qualifications (question_id);
