package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// PublisherHour is one UTC hour of a publisher's sessions, by the hour they entered.
type PublisherHour struct {
	Hour            time.Time `json:"hour"`
	Entries         int64     `json:"entries"`
	Completes       int64     `json:"completes"`        // accepted: rejected completes are not counted
	Terminations    int64     `json:"terminations"`     // over_quota, quality_term and disqualified
	Rejected        int64     `json:"rejected"`         // completes the buyer rejected (reversed)
	RevenueUSD      string    `json:"revenue_usd"`      // the publisher's payout of the accepted completes, four decimals
	RevenueCurrency int64     `json:"revenue_currency"` // their reward in the publisher's currency
}

// PublisherHourlyStats counts publisher pub's sessions (test sessions excluded) that entered
// in [from, to), per UTC hour, hours without sessions left out, oldest first. A session
// counts in the hour it entered, whenever its outcome came.
//
// sessions has no index by publisher (every index on it is paid by every entry and every
// callback, 0009_routing_speed.sql), so the query reads the window's sessions of every
// campaign (the join through campaigns lets the planner use sessions_campaign_entered, one
// range per campaign) and keeps pub's: its cost grows with the window's sessions, not with
// the table (the plan is not measured at scale yet).
func (db *DB) PublisherHourlyStats(ctx context.Context, pub int64, from, to time.Time) ([]PublisherHour, error) {
	rows, err := db.Pool.Query(ctx, `SELECT date_trunc('hour', s.entered_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
			count(*),
			count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected),
			count(*) FILTER (WHERE s.outcome IN ('over_quota', 'quality_term', 'disqualified')),
			count(*) FILTER (WHERE s.outcome = 'complete' AND s.rejected),
			COALESCE(sum(s.payout_usd) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected), 0)::numeric(14,4)::text,
			COALESCE(sum(s.reward) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected), 0)::bigint
		FROM campaigns c
		JOIN sessions s ON s.campaign_id = c.id AND NOT s.is_test AND s.entered_at >= $2 AND s.entered_at < $3
		WHERE s.publisher_id = $1
		GROUP BY 1 ORDER BY 1`, pub, from, to)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PublisherHour, error) {
		var h PublisherHour
		err := r.Scan(&h.Hour, &h.Entries, &h.Completes, &h.Terminations, &h.Rejected, &h.RevenueUSD, &h.RevenueCurrency)
		h.Hour = h.Hour.UTC()
		return h, err
	})
	return out, classify(err)
}
