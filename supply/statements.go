package supply

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// statementStore is the storage of the partner statements: a subset of persistence's
// LedgerStore.
type statementStore interface {
	PartnerStatement(ctx context.Context, publisherID int64, month time.Time) (persistence.PartnerMonth, error)
	OpenPartnerStatementCSV(ctx context.Context, publisherID int64, month time.Time) (*persistence.CSVExport, error)
}

const (
	// statementTimeout bounds the sums of one partner's month.
	statementTimeout = 30 * time.Second
	// maxStatementCSVs is how many statement CSVs one process streams at once; each holds a
	// pool connection for as long as its client reads. Beyond it: 503 with Retry-After.
	maxStatementCSVs = 4
)

// statementAnswer is the answer of GET /statements (docs/payouts.md, "Statements"): USD
// amounts with four decimals, and the rewards told in the partner's currency units.
type statementAnswer struct {
	Month         string `json:"month"`
	CurrencyName  string `json:"currency_name"`
	Completes     int64  `json:"completes"`
	Reversed      int64  `json:"reversed"`
	TotalUSD      string `json:"total_usd"`
	TotalCurrency int64  `json:"total_currency"`
}

// statement answers GET /statements?month=YYYY-MM: the calling partner's month
// (persistence.DB.PartnerStatement), or, asked for text/csv, one row per event, streamed. A
// missing or malformed month is a 400 naming it.
func (a *API) statement(ctx *fasthttp.RequestCtx) {
	if !httpio.AcceptsJSON(ctx) && !httpio.AcceptsCSV(ctx) {
		httpio.WriteMessage(ctx, httpio.StyleError, fasthttp.StatusNotAcceptable, "the Accept header must admit text/csv or application/json")
		return
	}
	pub, err := a.authenticate(ctx)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	raw := string(ctx.QueryArgs().Peek("month"))
	month, err := persistence.ParseMonth(raw)
	if err != nil {
		if raw == "" {
			a.fail(ctx, fault.BadRequest("month is required (YYYY-MM)"))
		} else {
			a.fail(ctx, fault.BadRequest("month must be a month, YYYY-MM"))
		}
		return
	}
	if httpio.WantsCSV(ctx) {
		if err := a.statementCSVs.Stream(ctx, "statement_"+raw+".csv", func(c context.Context) (httpio.CSVSource, error) {
			e, err := a.statements.OpenPartnerStatementCSV(c, pub.ID, month)
			if err != nil {
				return nil, err
			}
			return e, nil
		}, zap.Int64("publisher_id", pub.ID), zap.String("month", raw)); err != nil {
			a.fail(ctx, err)
		}
		return
	}
	dbctx, cancel := httpio.DBContext(statementTimeout)
	defer cancel()
	m, err := a.statements.PartnerStatement(dbctx, pub.ID, month)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, statementAnswer{Month: raw, CurrencyName: pub.CurrencyName,
		Completes: m.Completes, Reversed: m.Reversed, TotalUSD: payout.USD(m.EarningUSD).String(), TotalCurrency: m.Reward})
}
