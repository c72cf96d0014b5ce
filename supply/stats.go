package supply

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// offerStore is the storage of the offers counted for GET /stats: a subset of persistence's
// InsightStore.
type offerStore interface {
	AddPublisherOffers(ctx context.Context, counts []persistence.OfferHour) error
	PublisherHourlyStats(ctx context.Context, pub int64, from, to time.Time) ([]persistence.PublisherHour, error)
}

// maxStatsWindow is the longest from–to window of GET /stats.
const maxStatsWindow = 31 * 24 * time.Hour

// statsAnswer is the answer of GET /stats.
type statsAnswer struct {
	From  time.Time                   `json:"from"`
	To    time.Time                   `json:"to"`
	Hours []persistence.PublisherHour `json:"hours"`
}

// stats answers GET /stats?from=&to=: the calling publisher's sessions per UTC hour in
// [from, to) (persistence.PublisherHourlyStats; docs/supply.md). from and to are RFC 3339,
// to after from, at most 31 days apart; anything else is a 400 naming the field.
func (a *API) stats(ctx *fasthttp.RequestCtx) {
	pub, err := a.authenticate(ctx)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	from, err := queryTime(ctx.QueryArgs(), "from")
	if err != nil {
		a.fail(ctx, err)
		return
	}
	to, err := queryTime(ctx.QueryArgs(), "to")
	if err != nil {
		a.fail(ctx, err)
		return
	}
	switch {
	case !to.After(from):
		a.fail(ctx, fault.BadRequest("to must be after from"))
		return
	case to.Sub(from) > maxStatsWindow:
		a.fail(ctx, fault.BadRequest("to must be at most 31 days after from"))
		return
	}
	dbctx, cancel := httpio.DBContext(pageDBTimeout)
	defer cancel()
	hours, err := a.offers.PublisherHourlyStats(dbctx, pub.ID, from, to)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	if hours == nil {
		hours = []persistence.PublisherHour{}
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, statsAnswer{From: from.UTC(), To: to.UTC(), Hours: hours})
}

// queryTime reads the required RFC 3339 query parameter name.
func queryTime(args *fasthttp.Args, name string) (time.Time, error) {
	raw := args.Peek(name)
	if len(raw) == 0 {
		return time.Time{}, fault.BadRequest("%s is required (RFC 3339, e.g. 2026-01-02T15:04:05Z)", name)
	}
	t, err := time.Parse(time.RFC3339, string(raw))
	if err != nil {
		return time.Time{}, fault.BadRequest("%s must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", name)
	}
	return t, nil
}
