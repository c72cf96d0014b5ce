package persistence

import "context"

// CampaignStats are a campaign's field statistics as the buyer reads them, over its
// sessions (test sessions never count). Entries and Completes count sessions; a rejected
// complete is no complete. Conversion, ActualIncidence and AbandonRate are fractions
// (0 when their denominator is 0), rounded to 4 places.
type CampaignStats struct {
	// Entries is every session that entered the campaign.
	Entries int64 `json:"entries"`
	// Completes is every accepted (not rejected) complete.
	Completes int64 `json:"completes"`
	// Conversion is Completes / Entries.
	Conversion float64 `json:"conversion"`
	// MedianLOIMinutes is the median of a complete's callback time minus its entry time, in
	// minutes (2 places); nil while there is no complete.
	MedianLOIMinutes *float64 `json:"median_loi_minutes"`
	// ActualIncidence is Completes / (Completes + screen-outs), a screen-out being a session
	// whose outcome is disqualified or over quota: the share of respondents who got through
	// the buyer's screener. Quality terminations and sessions without outcome are outside it.
	ActualIncidence float64 `json:"actual_incidence"`
	// AbandonRate is the sessions still without outcome after the session max age
	// (2 × length_of_interview + 10 minutes, the sweeper's callback window) / Entries.
	AbandonRate float64 `json:"abandon_rate"`
	// CompletesToday is the accepted completes whose callback came today (UTC).
	CompletesToday int64 `json:"completes_today"`
}

// campaignStatsSQL computes every statistic of one campaign ($1) in one scan of its
// sessions (sessions_campaign_entered covers the non-test sessions of a campaign).
const campaignStatsSQL = `
WITH s AS (
	SELECT count(*) AS entries,
		count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND NOT s.overage) AS completes,
		count(*) FILTER (WHERE s.outcome IN ('disqualified', 'over_quota')) AS screenouts,
		count(*) FILTER (WHERE s.outcome IS NULL
			AND s.entered_at < now() - make_interval(mins => 2 * c.length_of_interview + 10)) AS abandoned,
		count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND NOT s.overage
			AND s.outcome_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS today,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM s.outcome_at - s.entered_at) / 60)
			FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND NOT s.overage AND s.outcome_at IS NOT NULL) AS median_loi
	FROM campaigns c JOIN sessions s ON s.campaign_id = c.id AND NOT s.is_test
	WHERE c.id = $1
)
SELECT entries, completes,
	CASE WHEN entries = 0 THEN 0 ELSE round(completes::numeric / entries, 4) END::float8,
	round(median_loi::numeric, 2)::float8,
	CASE WHEN completes + screenouts = 0 THEN 0 ELSE round(completes::numeric / (completes + screenouts), 4) END::float8,
	CASE WHEN entries = 0 THEN 0 ELSE round(abandoned::numeric / entries, 4) END::float8,
	today
FROM s`

// campaignStats reads the statistics of one campaign; the caller has checked its owner.
func campaignStats(ctx context.Context, q querier, campaignID int64) (CampaignStats, error) {
	var st CampaignStats
	err := q.QueryRow(ctx, campaignStatsSQL, campaignID).Scan(&st.Entries, &st.Completes, &st.Conversion,
		&st.MedianLOIMinutes, &st.ActualIncidence, &st.AbandonRate, &st.CompletesToday)
	return st, err
}
