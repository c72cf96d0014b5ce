package admin

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// statementPages are the buyer's statements and the operator's month in the console.
type statementPages struct {
	*console
	ledger statementLedger
}

// statementsPage is a buyer's month in the console: its spend per campaign, from the ledger
// (GET /api/v1/statements in a browser).
type statementsPage struct {
	consoleBase
	Month, Previous, Next string // YYYY-MM; Next "" for the current month
	Campaigns             []campaignSpend
	Total                 string
}

// exchangeMonthPage is the operator's month of the exchange: what buyers were charged,
// what partners earned and the margin, per buyer and per partner.
type exchangeMonthPage struct {
	consoleBase
	Month, Previous, Next string
	Closed                string // when the month was closed ("": open)
	Totals                monthLine
	Buyers, Partners      []monthLine
}

// monthLine is one line of the exchange's month, amounts in USD with four decimals.
type monthLine struct {
	ID                        int64
	Name                      string
	Events                    int64
	Charges, Earnings, Margin string
}

func lineOf(l persistence.MonthLine) monthLine {
	return monthLine{ID: l.ID, Name: l.Name, Events: l.Events, Charges: payout.USD(l.Charges).String(),
		Earnings: payout.USD(l.Earnings).String(), Margin: payout.USD(l.Margin).String()}
}

// registerConsoleStatements mounts the buyer's statements page and the operator's month;
// buyer wraps a handler for a buyer session.
func (a *statementPages) registerConsoleStatements(mux *httpio.Mux, buyer func(consoleHandler) fasthttp.RequestHandler) {
	mux.Handle("GET", ConsolePrefix+"/statements", buyer(a.consoleStatements))
	op := func(h consoleHandler) fasthttp.RequestHandler {
		return a.page(true, ConsolePrefix+"/operator/sign-in", h)
	}
	mux.Handle("GET", ConsolePrefix+"/operator/statements", op(a.consoleExchangeMonth))
}

// consoleMonth reads the page's month query parameter (YYYY-MM; missing: this UTC month)
// and names it and its neighbours (no next month after this one).
func consoleMonth(ctx *fasthttp.RequestCtx) (month time.Time, name, previous, next string, err error) {
	now := time.Now().UTC()
	this := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	month = this
	if raw := string(ctx.QueryArgs().Peek("month")); raw != "" {
		if month, err = persistence.ParseMonth(raw); err != nil {
			return month, "", "", "", fault.Invalid("month", "must be a month, YYYY-MM")
		}
	}
	if month.Before(this) {
		next = month.AddDate(0, 1, 0).Format("2006-01")
	}
	return month, month.Format("2006-01"), month.AddDate(0, -1, 0).Format("2006-01"), next, nil
}

// consoleStatements shows the buyer's month: the ledger's charges per campaign.
func (a *statementPages) consoleStatements(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	month, name, prev, next, err := consoleMonth(ctx)
	if err != nil {
		return err
	}
	lines, err := a.ledger.BuyerStatement(dbContext(ctx), s.Buyer.ID, month)
	if err != nil {
		return err
	}
	p := &statementsPage{consoleBase: s.base("Statement " + name), Month: name, Previous: prev, Next: next,
		Campaigns: make([]campaignSpend, len(lines))}
	var total int64
	for i, l := range lines {
		p.Campaigns[i] = campaignSpend{CampaignID: l.CampaignID, Completes: l.Completes, Reversed: l.Reversed, Amount: payout.USD(l.Amount).String()}
		total += l.Amount
	}
	p.Total = payout.USD(total).String()
	a.render(ctx, fasthttp.StatusOK, "statements", p)
	return nil
}

// consoleExchangeMonth shows the exchange's month to an operator.
func (a *statementPages) consoleExchangeMonth(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	month, name, prev, next, err := consoleMonth(ctx)
	if err != nil {
		return err
	}
	m, err := a.ledger.ExchangeMonth(dbContext(ctx), month)
	if err != nil {
		return err
	}
	p := &exchangeMonthPage{consoleBase: s.base("Exchange " + name), Month: name, Previous: prev, Next: next,
		Totals: lineOf(m.Totals), Buyers: make([]monthLine, len(m.Buyers)), Partners: make([]monthLine, len(m.Partners))}
	if !m.Closed.IsZero() {
		p.Closed = m.Closed.UTC().Format("2006-01-02 15:04:05") + " UTC"
	}
	for i, l := range m.Buyers {
		p.Buyers[i] = lineOf(l)
	}
	for i, l := range m.Partners {
		p.Partners[i] = lineOf(l)
	}
	a.render(ctx, fasthttp.StatusOK, "operator_statements", p)
	return nil
}
