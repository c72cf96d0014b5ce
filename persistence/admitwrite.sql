WITH r AS (
	INSERT INTO respondents (buyer_id, participant_id, respondent_id)
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])
	ON CONFLICT (buyer_id, participant_id) DO NOTHING
	RETURNING buyer_id, participant_id, respondent_id
), u AS (
	UPDATE campaign_quotas cq SET entries = cq.entries + d.n, in_progress = cq.in_progress + d.n
	FROM unnest($4::bigint[], $5::int[]) AS d(id, n) WHERE cq.id = d.id
	RETURNING cq.id
)
INSERT INTO sessions (id, tid, campaign_id, buyer_id, publisher_id, participant_id, device_id, quota_ids, respondent_id, offer_nonce)
SELECT e.id, e.tid, e.c, e.b, e.pub, e.p, e.dev, e.q::bigint[], CASE WHEN e.rid <> '' THEN e.rid
	ELSE COALESCE((SELECT r.respondent_id FROM r WHERE r.buyer_id = e.b AND r.participant_id = e.p), '') END, NULLIF(e.n, 0)
FROM unnest($6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::bigint[])
	AS e(tid, c, b, pub, p, dev, q, rid, n, id)
RETURNING tid, entered_at, respondent_id