-- 0007_insights.sql: what the insights interface and the CSV exports need beyond 0001–0006.

-- A respondent's answers to the custom screener questions of a campaign (docs/rules.md §5: the
-- hosted pre-screener asks them at entry). One row per session and question; pre_codes are
-- those of the custom question's answers. The results CSV reads them as tq_<question_id>.
CREATE TABLE screener_answers (
  session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  question_id int NOT NULL,
  pre_codes int[] NOT NULL DEFAULT '{}',
  answered_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, question_id)
);

-- The results of a campaign: sessions that reached complete, in id order. Serves the results
-- CSV (streamed in this order, no sort) and the "has responses" test behind results_url.
CREATE INDEX sessions_campaign_complete ON sessions (campaign_id, id)
  WHERE outcome = 'complete' AND NOT is_test;
