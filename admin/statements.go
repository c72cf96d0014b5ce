package admin

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

// statementLedger is the buyers' statements and the exchange's months (persistence LedgerStore).
type statementLedger interface {
	BuyerStatement(ctx context.Context, buyerID int64, month time.Time) ([]persistence.CampaignSpend, error)
	OpenBuyerStatementCSV(ctx context.Context, buyerID int64, month time.Time) (*persistence.CSVExport, error)
	ExchangeMonth(ctx context.Context, month time.Time) (persistence.ExchangeMonth, error)
}

// statementAPI serves the buyer's monthly statement.
type statementAPI struct {
	ledger  statementLedger
	exports *httpio.CSVStreams // shared with the insights exports
}

// statementAnswer is the answer of GET /statements (docs/payouts.md, "Statements").
type statementAnswer struct {
	Month     string          `json:"month"`
	Currency  string          `json:"currency"`
	Campaigns []campaignSpend `json:"campaigns"`
	Total     string          `json:"total"`
}

// campaignSpend is one campaign's line: amounts are USD with four decimals.
type campaignSpend struct {
	CampaignID int64  `json:"campaign_id"`
	Completes  int64  `json:"completes"`
	Reversed   int64  `json:"reversed"`
	Amount     string `json:"amount"`
}

// statementMonth reads the required month query parameter (YYYY-MM); missing or malformed
// is a 422 naming it.
func statementMonth(ctx *fasthttp.RequestCtx) (string, error) {
	raw := string(ctx.QueryArgs().Peek("month"))
	if raw == "" {
		return "", fault.Invalid("month", "is required (YYYY-MM)")
	}
	if _, err := persistence.ParseMonth(raw); err != nil {
		return "", fault.Invalid("month", "must be a month, YYYY-MM")
	}
	return raw, nil
}

// statement answers GET /statements?month=YYYY-MM: the buyer's charges of that UTC month
// per campaign (the ledger's BuyerStatement), or, asked for text/csv, one row per event,
// streamed.
func (a *statementAPI) statement(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	raw, err := statementMonth(ctx)
	if err != nil {
		return err
	}
	month, _ := persistence.ParseMonth(raw)
	if httpio.WantsCSV(ctx) {
		return a.exports.Stream(ctx, "statement_"+raw+".csv", func(c context.Context) (httpio.CSVSource, error) {
			e, err := a.ledger.OpenBuyerStatementCSV(c, b.ID, month)
			if err != nil {
				return nil, err
			}
			return e, nil
		}, zap.Int64("buyer_id", b.ID), zap.String("month", raw))
	}
	lines, err := a.ledger.BuyerStatement(dbContext(ctx), b.ID, month)
	if err != nil {
		return err
	}
	out := statementAnswer{Month: raw, Currency: "USD", Campaigns: make([]campaignSpend, len(lines))}
	var total int64
	for i, l := range lines {
		out.Campaigns[i] = campaignSpend{CampaignID: l.CampaignID, Completes: l.Completes, Reversed: l.Reversed, Amount: payout.USD(l.Amount).String()}
		total += l.Amount
	}
	out.Total = payout.USD(total).String()
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}
