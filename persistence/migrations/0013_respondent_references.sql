-- 0013_respondent_references.sql: the first entry of a participant into a buyer's campaigns
-- stores its {RESPONDENT_ID} (respondents) in the admission's write, and its foreign keys
-- to buyers and participants were checked (and the rows locked) row by row, like the
-- sessions' before 0012: about 28 µs of PostgreSQL time per such entry in the bench
-- market. The same reasons hold: nothing deletes buyers or participants, and admission
-- takes both ids from rows it has just read.
ALTER TABLE respondents
  DROP CONSTRAINT IF EXISTS respondents_buyer_id_fkey,
  DROP CONSTRAINT IF EXISTS respondents_participant_id_fkey;
