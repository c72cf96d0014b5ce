package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/persistence"
)

// postbackQueue is the partner postbacks' outbox (persistence OutboxStore).
type postbackQueue interface {
	PostbackStats(ctx context.Context) (persistence.PostbackStats, error)
	ListPostbacks(ctx context.Context, f persistence.PostbackFilter) ([]persistence.PostbackDelivery, error)
}

// outboxView is the operator view's outbox: what waits for delivery (partner postbacks and
// buyer webhooks), each destination's delivery lag, and the rows failing or dead.
type outboxView struct {
	Backlog  int64        // pending rows, postbacks and webhooks
	Lags     []lagRow     // destinations with pending rows, the longest waiting first
	Failures []failureRow // the latest failing or dead rows
}

// lagRow is one destination's backlog.
type lagRow struct {
	Recipient        string // "Puzzle Quest (partner #3)", "buyer #7"
	Pending, Failing int64
	Lag              string // how long the oldest pending row has waited
}

// failureRow is one failing or dead-lettered row.
type failureRow struct {
	persistence.PostbackDelivery
	Recipient string
}

// outboxFailures is how many failing rows the operator view lists.
const outboxFailures = 50

// outbox reads the operator view's outbox; names are the partners' names by id.
func (a *operatorPages) outbox(ctx *fasthttp.RequestCtx, names map[int64]string) (outboxView, error) {
	var v outboxView
	stats, err := a.postbacks.PostbackStats(dbContext(ctx))
	if err != nil {
		return v, err
	}
	v.Backlog = stats.Pending + stats.WebhooksPending
	for _, b := range stats.Backlogs {
		v.Lags = append(v.Lags, lagRow{Recipient: recipient(b.PublisherID, b.BuyerID, names), Pending: b.Pending,
			Failing: b.Failing, Lag: b.Oldest.Round(time.Second).String()})
	}
	failed, err := a.postbacks.ListPostbacks(dbContext(ctx), persistence.PostbackFilter{States: persistence.PostbackFailures, Limit: outboxFailures})
	if err != nil {
		return v, err
	}
	for _, d := range failed {
		v.Failures = append(v.Failures, failureRow{PostbackDelivery: d, Recipient: recipient(d.PublisherID, d.BuyerID, names)})
	}
	return v, nil
}

// recipient names an outbox row's destination: a partner (by name when known) or a buyer.
func recipient(publisherID, buyerID int64, names map[int64]string) string {
	if publisherID == 0 {
		return fmt.Sprintf("buyer #%d (webhook)", buyerID)
	}
	if n := names[publisherID]; n != "" {
		return fmt.Sprintf("%s (partner #%d)", n, publisherID)
	}
	return fmt.Sprintf("partner #%d", publisherID)
}
