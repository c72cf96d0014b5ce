-- 0016_project_drafts.sql: a project is a draft until one of its campaigns is first activated
-- (docs/rules.md §4); drafts are absent from the insights projects list, its paging and counts,
-- and from project reads.
--
-- Until now nothing set projects.is_draft, so every project was listed. New projects are now
-- created as drafts and published by the first activation (persistence.UpdateCampaign). Here
-- the existing ones are backfilled: a project stays published when one of its campaigns is in
-- any status but 5 Paused (it was active, or has left Paused since) or has a session that is
-- not a test (it was active when that respondent entered); every other project, a project
-- whose campaigns were all created paused and never received a respondent, is a draft.
UPDATE projects p SET is_draft = true
WHERE NOT EXISTS (
	SELECT 1 FROM campaigns c
	WHERE c.project_id = p.id
	AND (c.status <> 5 OR EXISTS (SELECT 1 FROM sessions s WHERE s.campaign_id = c.id AND NOT s.is_test))
);
