-- 0009_routing_speed.sql: cheaper session writes for entry and callbacks
-- (docs/performance.md, "Entries and callbacks").
--
-- Every entry inserts a session and every callback rewrites it (setting outcome is never a
-- HOT update: outcome is in partial-index predicates), so each index on sessions is paid
-- on both paths. sessions_participant (participant_id, campaign_id) is a prefix of
-- sessions_participant_entered (participant_id, campaign_id, entered_at), which serves
-- every lookup it served (reentry and relationship checks, the participants foreign key).
DROP INDEX IF EXISTS sessions_participant;
