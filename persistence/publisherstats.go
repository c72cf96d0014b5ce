package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// PublisherHour is one UTC hour of a publisher's sessions, by the hour they entered.
type PublisherHour struct {
	Hour            time.Time `json:"hour"`
	Offers          int64     `json:"offers"` // GET /campaigns answers served (AddPublisherOffers)
	Entries         int64     `json:"entries"`
	Completes       int64     `json:"completes"`        // accepted: rejected completes are not counted
	Terminations    int64     `json:"terminations"`     // over_quota, quality_term and disqualified
	Rejected        int64     `json:"rejected"`         // completes the buyer rejected (reversed)
	RevenueUSD      string    `json:"revenue_usd"`      // the publisher's payout of the accepted completes, four decimals
	RevenueCurrency int64     `json:"revenue_currency"` // their reward in the publisher's currency
}

// PublisherHourlyStats counts publisher pub's sessions (test sessions excluded) that entered
// in [from, to), per UTC hour, and the GET /campaigns answers it got in the hours that
// overlap [from, to) (counted per hour, not per instant); hours without either are left out,
// oldest first. A session counts in the hour it entered, whenever its outcome came.
//
// sessions has no index by publisher (every index on it is paid by every entry and every
// callback, 0009_routing_speed.sql), so the query reads the window's sessions of every
// campaign (the join through campaigns lets the planner use sessions_campaign_entered, one
// range per campaign) and keeps pub's: its cost grows with the window's sessions, not with
// the table (the plan is not measured at scale yet).
func (db *InsightStore) PublisherHourlyStats(ctx context.Context, pub int64, from, to time.Time) ([]PublisherHour, error) {
	rows, err := db.Pool.Query(ctx, `WITH s AS (SELECT date_trunc('hour', s.entered_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour,
			count(*) AS entries,
			count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected) AS c,
			count(*) FILTER (WHERE s.outcome IN ('over_quota', 'quality_term', 'disqualified')) AS t,
			count(*) FILTER (WHERE s.outcome = 'complete' AND s.rejected) AS r,
			COALESCE(sum(s.payout_usd) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected), 0)::numeric(14,4)::text AS usd,
			COALESCE(sum(s.reward) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected), 0)::bigint AS cur
		FROM campaigns c
		JOIN sessions s ON s.campaign_id = c.id AND NOT s.is_test AND s.entered_at >= $2 AND s.entered_at < $3
		WHERE s.publisher_id = $1
		GROUP BY 1),
		o AS (SELECT hour, offers FROM publisher_offer_hours
			WHERE publisher_id = $1 AND hour > $2::timestamptz - interval '1 hour' AND hour < $3)
		SELECT COALESCE(s.hour, o.hour), COALESCE(o.offers, 0), COALESCE(s.entries, 0), COALESCE(s.c, 0), COALESCE(s.t, 0),
			COALESCE(s.r, 0), COALESCE(s.usd, '0.0000'), COALESCE(s.cur, 0)
		FROM s FULL JOIN o ON o.hour = s.hour
		ORDER BY 1`, pub, from, to)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PublisherHour, error) {
		var h PublisherHour
		err := r.Scan(&h.Hour, &h.Offers, &h.Entries, &h.Completes, &h.Terminations, &h.Rejected, &h.RevenueUSD, &h.RevenueCurrency)
		h.Hour = h.Hour.UTC()
		return h, err
	})
	return out, classify(err)
}

// OfferHour is a number of GET /campaigns answers a publisher got in one UTC hour.
type OfferHour struct {
	Publisher int64
	Hour      time.Time // the start of the hour, UTC
	Offers    int64
}

// AddPublisherOffers adds counts of GET /campaigns answers to their publishers' hours (one
// statement; each process adds what it served since its last flush).
func (db *InsightStore) AddPublisherOffers(ctx context.Context, counts []OfferHour) error {
	if len(counts) == 0 {
		return nil
	}
	pubs := make([]int64, len(counts))
	hours := make([]time.Time, len(counts))
	ns := make([]int64, len(counts))
	for i, c := range counts {
		pubs[i], hours[i], ns[i] = c.Publisher, c.Hour.UTC().Truncate(time.Hour), c.Offers
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO publisher_offer_hours AS h (publisher_id, hour, offers)
		SELECT p, hr, sum(n) FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[]) AS u(p, hr, n)
		WHERE EXISTS (SELECT 1 FROM publishers WHERE id = p)
		GROUP BY p, hr
		ON CONFLICT (publisher_id, hour) DO UPDATE SET offers = h.offers + EXCLUDED.offers`, pubs, hours, ns)
	return classify(err)
}
