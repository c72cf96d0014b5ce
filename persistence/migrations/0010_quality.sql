-- 0010_quality.sql: participant quality signals and the blocks decided from them
-- (docs/quality.md).

-- One row per piece of evidence against a participant. ref makes a signal idempotent: the
-- transaction id of a quality_term, rejected or speeding session, the device identifier of
-- a shared device, the impanel-log id of an implausible profile change, the country set of
-- a multi-country user.
CREATE TABLE quality_signals (
  id bigserial PRIMARY KEY,
  participant_id bigint NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  kind text NOT NULL CHECK (kind IN ('quality_term', 'rejected', 'speeder', 'shared_device',
    'multi_country', 'implausible_age', 'implausible_gender')),
  rule_class text NOT NULL CHECK (rule_class IN ('outcomes', 'speeding', 'duplicates', 'implausible_profile')),
  ref text NOT NULL,
  tid text,
  evidence jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (participant_id, kind, ref)
);
CREATE INDEX quality_signals_participant ON quality_signals (participant_id, created_at);
-- The speeder column of the exports.
CREATE INDEX quality_signals_speeder_tid ON quality_signals (tid) WHERE kind = 'speeder';

-- Decisions: a block of (publisher, user) until expires_at unless an operator lifts it
-- (unblocked_at). Signals older than a participant's latest decision no longer count.
CREATE TABLE quality_blocks (
  id bigserial PRIMARY KEY,
  participant_id bigint NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  user_identifier text NOT NULL,
  rule_class text NOT NULL,
  evidence jsonb NOT NULL,
  blocked_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  unblocked_at timestamptz,
  unblock_note text
);
CREATE INDEX quality_blocks_participant ON quality_blocks (participant_id, blocked_at DESC);
CREATE INDEX quality_blocks_active ON quality_blocks (expires_at) WHERE unblocked_at IS NULL;

-- Every impanel's country, AGE and GENDER: the history the duplicate and implausible-profile
-- rules read. Rows older than 300 days can be pruned.
CREATE TABLE quality_impanels (
  id bigserial PRIMARY KEY,
  participant_id bigint NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
  country_id int NOT NULL,
  age int,
  gender int,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX quality_impanels_participant ON quality_impanels (participant_id, at);

-- (publisher, device identifier, user identifier) sightings from impanel and GET /campaigns,
-- written in batches: the shared-device rule counts users per device over 24 hours.
CREATE TABLE quality_device_sightings (
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  device_id text NOT NULL,
  user_identifier text NOT NULL,
  last_seen timestamptz NOT NULL,
  PRIMARY KEY (publisher_id, device_id, user_identifier)
);
CREATE INDEX quality_device_sightings_seen ON quality_device_sightings (last_seen);

-- Whether a session was marked a speeder (the exports' speeder column).
CREATE FUNCTION quality_speeder(t text) RETURNS boolean LANGUAGE sql STABLE AS
  $$ SELECT EXISTS (SELECT 1 FROM quality_signals WHERE tid = t AND kind = 'speeder') $$;
