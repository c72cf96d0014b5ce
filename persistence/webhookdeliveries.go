package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookFilter selects one buyer's webhook deliveries.
type WebhookFilter struct {
	BuyerID  int64
	States   []string // the delivery states listed (WebhookStates), at least one
	BeforeID int64    // 0: from the newest; else rows with a smaller id (the next page)
	Limit    int      // rows at most (1..1000)
}

// WebhookDelivery is one webhook event's delivery as its buyer sees it: the event, where it
// goes, its state and attempts.
type WebhookDelivery struct {
	ID            int64      `json:"id"`
	EventID       string     `json:"event_id"`
	Type          string     `json:"type"`
	CampaignID    int64      `json:"campaign_id"`
	URL           string     `json:"url"`    // the webhook URL when the event was stored
	Status        string     `json:"status"` // one of WebhookStates
	Attempts      int        `json:"attempts"`
	LastError     *string    `json:"last_error"` // the last failed attempt's reason
	CreatedAt     time.Time  `json:"created_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"` // nil once delivered or dead
	DeliveredAt   *time.Time `json:"delivered_at"`
	DeadAt        *time.Time `json:"dead_at"`
	RetriedAt     *time.Time `json:"retried_at"` // the last operator retry of a dead letter
}

// ListWebhookDeliveries returns the buyer's webhook deliveries f selects, newest first.
func (db *OutboxStore) ListWebhookDeliveries(ctx context.Context, f WebhookFilter) ([]WebhookDelivery, error) {
	where, err := outboxStatesSQL(f.States)
	if err != nil {
		return nil, err
	}
	limit := min(max(f.Limit, 1), 1000)
	rows, err := db.Pool.Query(ctx, `SELECT id, tid, COALESCE(ev->>'type', ''), COALESCE((ev->>'campaign_id')::bigint, 0), url,
			`+outboxStateSQL+`,
			attempts, last_error, created_at,
			CASE WHEN delivered_at IS NULL AND dead_at IS NULL THEN next_attempt_at END, delivered_at, dead_at, retried_at
		FROM (SELECT *, convert_from(body, 'UTF8')::jsonb AS ev FROM postback_outbox
			WHERE buyer_id = $1 AND ($2 = 0 OR id < $2) AND (`+where+`)
			ORDER BY id DESC LIMIT $3) o
		ORDER BY id DESC`, f.BuyerID, f.BeforeID, limit)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookDelivery, error) {
		var d WebhookDelivery
		err := r.Scan(&d.ID, &d.EventID, &d.Type, &d.CampaignID, &d.URL, &d.Status, &d.Attempts, &d.LastError,
			&d.CreatedAt, &d.NextAttemptAt, &d.DeliveredAt, &d.DeadAt, &d.RetriedAt)
		return d, err
	})
	return out, classify(err)
}
