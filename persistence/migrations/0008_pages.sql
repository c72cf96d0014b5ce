-- 0008_pages.sql: what the hosted participant pages record (docs/supply.md, "Hosted pages").

-- A message sent from the support page behind support_url, for the operator to answer.
-- session_kind tells what the participant was doing: 'profile' (the hosted profiler, before
-- the participant had an id: user_identifier names them) or 'survey' (offers of a profiled
-- participant). campaign_id is the survey the message is about, when the participant chose
-- one. token_nonce is the nonce of the support token: it bounds how many messages one token
-- may send and lets the confirmation page check that the request is its own.
CREATE TABLE support_requests (
  id bigserial PRIMARY KEY,
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  participant_id bigint REFERENCES participants(id),
  user_identifier text NOT NULL DEFAULT '',
  campaign_id bigint REFERENCES campaigns(id) ON DELETE SET NULL,
  session_kind text NOT NULL CHECK (session_kind IN ('profile', 'survey')),
  message text NOT NULL,
  contact_email text,
  token_nonce bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz
);
CREATE INDEX support_requests_open ON support_requests (created_at) WHERE resolved_at IS NULL;
CREATE INDEX support_requests_nonce ON support_requests (token_nonce);

-- Every answer sheet of the hosted pre-screener (docs/rules.md §5), qualified or not: answers is
-- {"<question_id>": [pre_codes]}. A qualified sheet is attached to the session its entry
-- created (session_id), whose screener_answers rows (0007) the insights results read as
-- tq_<question_id>; a sheet that did not qualify has no session.
CREATE TABLE prescreen_responses (
  id bigserial PRIMARY KEY,
  token_nonce bigint NOT NULL,
  publisher_id bigint NOT NULL REFERENCES publishers(id),
  participant_id bigint NOT NULL REFERENCES participants(id),
  campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  answers jsonb NOT NULL,
  qualified boolean NOT NULL,
  session_id bigint REFERENCES sessions(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX prescreen_responses_campaign ON prescreen_responses (campaign_id, created_at);
