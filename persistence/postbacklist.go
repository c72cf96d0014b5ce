package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Outbox delivery states: the status a listed postback or webhook carries, and what a
// listing selects (one vocabulary for both). Delivered rows, the bulk of the table, are not
// listed for partners and operators: only the two partial indexes over undelivered rows are
// read, so such a listing never scans the outbox (which has no index by publisher). A buyer's
// webhook deliveries are read by buyer (ListWebhookDeliveries), delivered ones too.
const (
	PostbackPending   = "pending"   // not tried yet
	PostbackRetrying  = "retrying"  // failed at least once, tried again at next_attempt_at
	PostbackDead      = "dead"      // dead-lettered after the retry window, or refused for good
	PostbackDelivered = "delivered" // answered 2xx (a buyer's webhook deliveries only)
)

// PostbackStates are the delivery states a postback listing selects, in the order a postback
// goes through them.
var PostbackStates = []string{PostbackPending, PostbackRetrying, PostbackDead}

// WebhookStates are the delivery states a buyer's webhook listing selects.
var WebhookStates = []string{PostbackPending, PostbackRetrying, PostbackDead, PostbackDelivered}

// PostbackFailures are the states of the postbacks that failed and are not delivered: a
// listing's default, what a partner or an operator looks at first.
var PostbackFailures = []string{PostbackRetrying, PostbackDead}

// PostbackBacklog are the states of the postbacks still owed and not given up on.
var PostbackBacklog = []string{PostbackPending, PostbackRetrying}

// postbackFailedAlias is another spelling of PostbackFailures in a status filter, which
// partners' and operators' scripts use.
const postbackFailedAlias = "failed"

// ParsePostbackStates reads a postback listing's status filter: states of PostbackStates
// separated by commas ("failed" stands for retrying and dead). It returns them in
// PostbackStates's order, and false when the filter is empty or names anything else.
func ParsePostbackStates(filter string) ([]string, bool) {
	return parseStates(filter, PostbackStates)
}

// ParseWebhookStates reads a webhook listing's status filter: "all" (or nothing) for every
// state, else states of WebhookStates separated by commas ("failed" stands for retrying and
// dead). It returns false when the filter names anything else.
func ParseWebhookStates(filter string) ([]string, bool) {
	if filter == "" || filter == "all" {
		return WebhookStates, true
	}
	return parseStates(filter, WebhookStates)
}

func parseStates(filter string, known []string) ([]string, bool) {
	want := map[string]bool{}
	for _, s := range strings.Split(filter, ",") {
		switch {
		case s == postbackFailedAlias:
			want[PostbackRetrying], want[PostbackDead] = true, true
		case slices.Contains(known, s):
			want[s] = true
		default:
			return nil, false
		}
	}
	var out []string
	for _, s := range known {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, true
}

// PostbackFilter selects outbox rows for ListPostbacks.
type PostbackFilter struct {
	PublisherID int64 // > 0: this publisher's postbacks only
	// BuyerID > 0: this buyer's webhooks only. With neither, every row: partner postbacks
	// and buyer webhooks (operators).
	BuyerID  int64
	States   []string // the delivery states listed (PostbackStates), at least one
	BeforeID int64    // 0: from the newest; else rows with a smaller id (the next page)
	Limit    int      // rows at most (1..1000)
}

// PostbackDelivery is one outbox row as partners and operators see it: its delivery state
// and attempts, never its URL (the URL carries a signature). A partner postback names its
// publisher, a buyer webhook (operators' listings) its buyer instead.
type PostbackDelivery struct {
	ID            int64      `json:"id"`
	PublisherID   int64      `json:"publisher_id,omitempty"`
	BuyerID       int64      `json:"buyer_id,omitempty"`
	TID           string     `json:"tid"` // a webhook's event_id
	Kind          string     `json:"kind"`
	Status        string     `json:"status"` // one of PostbackStates
	Attempts      int        `json:"attempts"`
	LastError     *string    `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"` // nil once dead
	DeadAt        *time.Time `json:"dead_at"`
	RetriedAt     *time.Time `json:"retried_at"` // the last operator retry of a dead letter
}

// ListPostbacks returns the undelivered outbox rows f selects, newest first.
func (db *OutboxStore) ListPostbacks(ctx context.Context, f PostbackFilter) ([]PostbackDelivery, error) {
	where, err := outboxStatesSQL(f.States)
	if err != nil {
		return nil, err
	}
	limit := min(max(f.Limit, 1), 1000)
	rows, err := db.Pool.Query(ctx, `SELECT id, COALESCE(publisher_id, 0), COALESCE(buyer_id, 0), tid, kind,
			`+outboxStateSQL+`,
			attempts, last_error, created_at,
			CASE WHEN dead_at IS NULL THEN next_attempt_at END, dead_at, retried_at
		FROM postback_outbox
		WHERE (`+where+`) AND ($1 = 0 OR publisher_id = $1) AND ($4 = 0 OR buyer_id = $4) AND ($2 = 0 OR id < $2)
		ORDER BY id DESC LIMIT $3`, f.PublisherID, f.BeforeID, limit, f.BuyerID)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PostbackDelivery, error) {
		var d PostbackDelivery
		err := r.Scan(&d.ID, &d.PublisherID, &d.BuyerID, &d.TID, &d.Kind, &d.Status, &d.Attempts, &d.LastError, &d.CreatedAt,
			&d.NextAttemptAt, &d.DeadAt, &d.RetriedAt)
		return d, err
	})
	return out, classify(err)
}

// outboxStateSQL is an outbox row's delivery state, one of WebhookStates.
const outboxStateSQL = `CASE WHEN delivered_at IS NOT NULL THEN '` + PostbackDelivered + `'
	WHEN dead_at IS NOT NULL THEN '` + PostbackDead + `' WHEN last_error IS NOT NULL THEN '` + PostbackRetrying + `'
	ELSE '` + PostbackPending + `' END`

// outboxStatesSQL is the condition on outbox rows that selects states: the rows not
// delivered and not dead (the due index), the dead ones (the dead index), the delivered ones.
func outboxStatesSQL(states []string) (string, error) {
	var pending, retrying, dead, delivered bool
	for _, s := range states {
		switch s {
		case PostbackPending:
			pending = true
		case PostbackRetrying:
			retrying = true
		case PostbackDead:
			dead = true
		case PostbackDelivered:
			delivered = true
		default:
			return "", fmt.Errorf("persistence: unknown postback state %q", s)
		}
	}
	var parts []string
	switch {
	case pending && retrying:
		parts = append(parts, `(delivered_at IS NULL AND dead_at IS NULL)`)
	case pending:
		parts = append(parts, `(delivered_at IS NULL AND dead_at IS NULL AND last_error IS NULL)`)
	case retrying:
		parts = append(parts, `(delivered_at IS NULL AND dead_at IS NULL AND last_error IS NOT NULL)`)
	}
	if dead {
		parts = append(parts, `dead_at IS NOT NULL`)
	}
	if delivered {
		parts = append(parts, `delivered_at IS NOT NULL`)
	}
	if len(parts) == 0 {
		return "", errors.New("persistence: a postback listing needs at least one state")
	}
	return strings.Join(parts, " OR "), nil
}

// RetryPostbacks makes dead-lettered outbox rows (partner postbacks and buyer webhooks) owed
// again (retrying), due now, with a fresh retry window from now (retried_at; created_at keeps
// the enqueue time), in one UPDATE, and wakes the workers. ids selects rows (empty: every
// dead row); publisherID > 0 restricts to one publisher's postbacks, buyerID > 0 to one
// buyer's webhooks. Rows not dead are left alone. It returns the ids made owed again.
func (db *OutboxStore) RetryPostbacks(ctx context.Context, publisherID, buyerID int64, ids []int64) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `WITH r AS (
			UPDATE postback_outbox SET dead_at = NULL, retried_at = now(), next_attempt_at = now()
			WHERE dead_at IS NOT NULL AND ($1 = 0 OR publisher_id = $1) AND ($3 = 0 OR buyer_id = $3)
				AND (COALESCE(cardinality($2::bigint[]), 0) = 0 OR id = ANY($2))
			RETURNING id)
		SELECT id FROM r ORDER BY id`, publisherID, ids, buyerID)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, classify(err)
	}
	if len(out) > 0 {
		if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, '')`, PostbackChannel); err != nil {
			return out, classify(err) // the workers' poll finds the rows all the same
		}
	}
	return out, nil
}
