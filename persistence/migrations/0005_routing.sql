-- 0005_routing.sql: what entry routing and callbacks need beyond 0001 (docs/rules.md §5–§8).
--
-- Postgres is the arbiter of every quota's last places: an entry is admitted by one
-- statement that locks the quota rows the respondent matched and checks these counts, and a
-- callback moves them in the transaction that records its outcome. Engines on every serve
-- process only mirror them (docs/architecture.md, "Counting across processes").

-- Sessions entered with no outcome yet that still hold a place in the quota.
ALTER TABLE campaign_quotas ADD COLUMN in_progress int NOT NULL DEFAULT 0;

-- released_at: the sweeper gave up waiting for this session's callback (2 × LOI + 10 min)
-- and took it out of in_progress; a late callback is still accepted but does not decrement
-- again. rejected_at: when reject_completes or reconcile rejected the complete.
-- respondent_id: the {RESPONDENT_ID} handed to the buyer with this session.
-- Test sessions (redirect_test) have no partner and no participant.
ALTER TABLE sessions
  ALTER COLUMN publisher_id DROP NOT NULL,
  ALTER COLUMN participant_id DROP NOT NULL,
  ADD COLUMN released_at timestamptz,
  ADD COLUMN rejected_at timestamptz,
  ADD COLUMN respondent_id text NOT NULL DEFAULT '';

-- The sweeper's scan: sessions still waiting for a callback.
CREATE INDEX sessions_waiting ON sessions (entered_at)
  WHERE outcome IS NULL AND released_at IS NULL AND NOT is_test;
-- Reentry and relationship checks at entry, the broken-link detector.
CREATE INDEX sessions_participant_entered ON sessions (participant_id, campaign_id, entered_at);
CREATE INDEX sessions_campaign_entered ON sessions (campaign_id, entered_at DESC) WHERE NOT is_test;

-- Outcomes and completes per campaign and UTC day (of the callback): max_daily_completes
-- reads today's completes; the sums are the engine's conversion statistics. Moved by
-- callbacks, rejections and reconciliations in their own transactions.
CREATE TABLE campaign_daily_counts (
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  day date NOT NULL,
  outcomes int NOT NULL DEFAULT 0,
  completes int NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign_id, day)
);

-- One row per reject_completes request: its "id".
CREATE TABLE complete_rejections (
  id bigserial PRIMARY KEY,
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  rejected_tids text[] NOT NULL,
  not_found_tids text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per reconcile request: its "id".
CREATE TABLE reconciliations (
  id bigserial PRIMARY KEY,
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  purchase_order text,
  accepted_count int NOT NULL,
  rejected_count int NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
