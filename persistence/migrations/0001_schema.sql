-- Switchboard schema: reference data, accounts, campaigns and their targeting.

CREATE TABLE countries (
  id int PRIMARY KEY,
  name text NOT NULL,
  iso_code text NOT NULL UNIQUE
);

CREATE TABLE country_languages (
  id int PRIMARY KEY,
  abbr text NOT NULL UNIQUE,
  country_id int NOT NULL REFERENCES countries(id),
  language_name text NOT NULL
);

-- Custom qualifications take ids from this sequence, far above the standard catalog.
CREATE SEQUENCE custom_question_id_seq START 100000;

-- One row per (question, country language). Standard questions share a question_id across
-- country languages; custom ones (buyer_id set) exist in exactly one.
CREATE TABLE qualifications (
  question_id int NOT NULL,
  country_language_id int NOT NULL REFERENCES country_languages(id),
  name text NOT NULL,
  question_text text NOT NULL,
  en_translation text NOT NULL,
  answer_type smallint NOT NULL,
  required boolean NOT NULL DEFAULT false,
  position int NOT NULL,
  buyer_id bigint,
  PRIMARY KEY (question_id, country_language_id)
);

CREATE TABLE qualification_answers (
  question_id int NOT NULL,
  country_language_id int NOT NULL,
  pre_code int NOT NULL,
  option_text text NOT NULL,
  en_translation text NOT NULL,
  position int NOT NULL,
  PRIMARY KEY (question_id, country_language_id, pre_code),
  FOREIGN KEY (question_id, country_language_id)
    REFERENCES qualifications(question_id, country_language_id) ON DELETE CASCADE
);

-- Price in cents for length_of_interview <= loi_max and incidence >= incidence_min; the row
-- with the smallest loi_max and the largest incidence_min that still apply wins.
CREATE TABLE rate_card (
  loi_max int NOT NULL,
  incidence_min int NOT NULL,
  cpi_cents int NOT NULL,
  PRIMARY KEY (loi_max, incidence_min)
);

CREATE TABLE buyers (
  id bigserial PRIMARY KEY,
  customer_id text NOT NULL UNIQUE,
  email text NOT NULL UNIQUE,
  name text NOT NULL DEFAULT '',
  api_secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Tokens are stored only as SHA-256 hashes.
CREATE TABLE buyer_tokens (
  id bigserial PRIMARY KEY,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  environment text NOT NULL CHECK (environment IN ('staging', 'live')),
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE publishers (
  id bigserial PRIMARY KEY,
  name text NOT NULL,
  currency_name text NOT NULL,
  exchange_rate numeric(14,4) NOT NULL CHECK (exchange_rate > 0),
  revenue_share numeric(6,4) NOT NULL CHECK (revenue_share > 0 AND revenue_share <= 1),
  redirect_url text NOT NULL,
  postback_url text,
  api_secret text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('staging', 'live')),
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE adhoc_accounts (
  id bigserial PRIMARY KEY,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  buyer_name text NOT NULL DEFAULT '',
  buyer_identifier text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id bigserial PRIMARY KEY,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  name text NOT NULL,
  project_type text NOT NULL DEFAULT 'one_time' CHECK (project_type IN ('one_time', 'recurring')),
  is_draft boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projects_buyer ON projects (buyer_id, id);

CREATE TABLE campaigns (
  id bigserial PRIMARY KEY,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  project_id bigint NOT NULL REFERENCES projects(id),
  wave_number int NOT NULL DEFAULT 1,
  name text NOT NULL,
  cpi_cents int NOT NULL,
  days_in_field int NOT NULL DEFAULT 5,
  incidence int NOT NULL,
  status smallint NOT NULL DEFAULT 5,
  length_of_interview int NOT NULL,
  supplier_link text NOT NULL,
  max_daily_completes int,
  reentry_interval int,
  country_language_id int NOT NULL REFERENCES country_languages(id),
  is_retarget boolean NOT NULL DEFAULT false,
  is_maid_targeted boolean NOT NULL DEFAULT false,
  supported_devices smallint[] NOT NULL DEFAULT '{}',
  buyer_account_id bigint REFERENCES adhoc_accounts(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  status_changed_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX campaigns_buyer ON campaigns (buyer_id, id);
CREATE INDEX campaigns_active ON campaigns (status) WHERE status = 2;

CREATE TABLE campaign_quotas (
  id bigserial PRIMARY KEY,
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  name text,
  num_respondents int NOT NULL,
  is_click_balanced boolean NOT NULL DEFAULT false,
  is_global boolean NOT NULL DEFAULT false,
  -- Authoritative live counts, maintained by entry and callback transactions.
  completes int NOT NULL DEFAULT 0,
  entries int NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX campaign_quotas_campaign ON campaign_quotas (campaign_id, id);

-- A quota's targeting: select questions keep integer pre_codes, text questions (AGE aside)
-- keep normalized strings.
CREATE TABLE quota_qualifications (
  id bigserial PRIMARY KEY,
  quota_id bigint NOT NULL REFERENCES campaign_quotas(id) ON DELETE CASCADE,
  question_id int NOT NULL,
  pre_codes int[] NOT NULL DEFAULT '{}',
  text_values text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX quota_qualifications_quota ON quota_qualifications (quota_id, id);

-- Custom screener questions attached to a campaign.
CREATE TABLE campaign_qualifications (
  id bigserial PRIMARY KEY,
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  question_id int NOT NULL,
  pre_codes int[] NOT NULL DEFAULT '{}'
);
CREATE INDEX campaign_qualifications_campaign ON campaign_qualifications (campaign_id, id);

CREATE TABLE campaign_relationships (
  id bigserial PRIMARY KEY,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  related_campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  CHECK (campaign_id <> related_campaign_id)
);
CREATE UNIQUE INDEX campaign_relationships_pair
  ON campaign_relationships (LEAST(campaign_id, related_campaign_id), GREATEST(campaign_id, related_campaign_id));

CREATE TABLE campaign_retargets (
  id bigserial PRIMARY KEY,
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  retargeting_type smallint NOT NULL CHECK (retargeting_type BETWEEN 0 AND 3),
  identifier text NOT NULL,
  replacement_id text,
  participant_id bigint,
  expires_at timestamptz NOT NULL,
  UNIQUE (campaign_id, retargeting_type, identifier)
);

-- Participants impaneled by supply partners.
CREATE TABLE participants (
  id bigserial PRIMARY KEY,
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  user_identifier text NOT NULL,
  country_id int NOT NULL REFERENCES countries(id),
  profile jsonb NOT NULL DEFAULT '{}',
  attributes jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  last_active_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (publisher_id, user_identifier)
);

-- The opaque {RESPONDENT_ID} a buyer sees for a participant.
CREATE TABLE respondents (
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  participant_id bigint NOT NULL REFERENCES participants(id),
  respondent_id text NOT NULL,
  PRIMARY KEY (buyer_id, participant_id),
  UNIQUE (buyer_id, respondent_id)
);

CREATE TABLE campaign_exclusions (
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  participant_id bigint NOT NULL REFERENCES participants(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (campaign_id, participant_id)
);

-- One participant's visit to one campaign, keyed by the transaction id handed to the buyer.
CREATE TABLE sessions (
  id bigserial PRIMARY KEY,
  tid text NOT NULL UNIQUE,
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  buyer_id bigint NOT NULL REFERENCES buyers(id),
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  participant_id bigint NOT NULL REFERENCES participants(id),
  device_id text NOT NULL DEFAULT '',
  quota_ids bigint[] NOT NULL DEFAULT '{}',
  is_test boolean NOT NULL DEFAULT false,
  entered_at timestamptz NOT NULL DEFAULT now(),
  outcome text CHECK (outcome IN ('complete', 'over_quota', 'quality_term', 'disqualified')),
  outcome_at timestamptz,
  rejected boolean NOT NULL DEFAULT false,
  payout_usd numeric(10,4),
  reward int
);
CREATE INDEX sessions_campaign ON sessions (campaign_id, id);
CREATE INDEX sessions_participant ON sessions (participant_id, campaign_id);
