package persistence

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// ParseMonth reads a statement month, "YYYY-MM" (a four-digit year from 0001, a two-digit
// month), as the first instant of that UTC month. Anything else is an error that names no
// field: the caller says which.
func ParseMonth(s string) (time.Time, error) {
	if len(s) != 7 || s[4] != '-' {
		return time.Time{}, errMonth
	}
	for i, c := range []byte(s) {
		if i != 4 && (c < '0' || c > '9') {
			return time.Time{}, errMonth
		}
	}
	y, _ := strconv.Atoi(s[:4])
	m, _ := strconv.Atoi(s[5:])
	if y < 1 || m < 1 || m > 12 {
		return time.Time{}, errMonth
	}
	return time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC), nil
}

var errMonth = errors.New("must be a month, YYYY-MM")

// monthBounds is the UTC month starting at month: [lo, hi).
func monthBounds(month time.Time) (lo, hi time.Time) {
	lo = time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	return lo, lo.AddDate(0, 1, 0)
}

// CampaignSpend is one campaign's line of a buyer's monthly statement: the completes it was
// charged for, the completes reversed, and the net charge, in ten-thousandths of a USD.
type CampaignSpend struct {
	CampaignID int64
	Completes  int64
	Reversed   int64
	Amount     int64
}

// buyerStatementWhere selects a buyer's ($1) statement events of the month [$2, $3): every
// event that moves the buyer's money (a time payout of a screen-out charges nothing). The
// range on at is what the BRIN index on at finds.
const buyerStatementWhere = `buyer_id = $1 AND at >= $2 AND at < $3 AND kind <> 'screenout'`

// BuyerStatement is a buyer's statement of the UTC month starting at month, per campaign in
// campaign id order: completes counts accepted completes charged (callback or reconcile),
// reversed the completes refunded, amount the charges less the refunds (docs/payouts.md,
// "Statements").
func (db *LedgerStore) BuyerStatement(ctx context.Context, buyerID int64, month time.Time) ([]CampaignSpend, error) {
	lo, hi := monthBounds(month)
	rows, err := db.Pool.Query(ctx, `SELECT campaign_id,
		count(*) FILTER (WHERE kind IN ('complete', 'acceptance') AND charge_usd > 0),
		count(*) FILTER (WHERE kind = 'reversal' AND charge_usd < 0),
		COALESCE(sum(charge_usd), 0)::bigint
		FROM ledger_events WHERE `+buyerStatementWhere+` GROUP BY campaign_id ORDER BY campaign_id`, buyerID, lo, hi)
	if err != nil {
		return nil, classify(err)
	}
	out := []CampaignSpend{}
	var c CampaignSpend
	_, err = pgx.ForEachRow(rows, []any{&c.CampaignID, &c.Completes, &c.Reversed, &c.Amount}, func() error {
		out = append(out, c)
		return nil
	})
	return out, classify(err)
}

// PartnerMonth is a partner's statement of one month: the completes it earned (by callback
// or reconcile), the completes reversed, its net earning in ten-thousandths of a USD, and
// the sum of the rewards it was told, in its currency units (each rounded as the redirect's
// reward).
type PartnerMonth struct {
	Completes  int64
	Reversed   int64
	EarningUSD int64
	Reward     int64
}

// partnerStatementWhere selects a partner's ($1) statement events of the month [$2, $3):
// every event the partner was told of (an acceptance of a complete it was paid for already
// tells it nothing).
const partnerStatementWhere = `publisher_id = $1 AND at >= $2 AND at < $3 AND NOT (kind = 'acceptance' AND earning_usd = 0)`

// PartnerStatement is the statement of a partner's UTC month starting at month
// (docs/payouts.md, "Statements").
func (db *LedgerStore) PartnerStatement(ctx context.Context, publisherID int64, month time.Time) (PartnerMonth, error) {
	lo, hi := monthBounds(month)
	var p PartnerMonth
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind IN ('complete', 'acceptance')),
		count(*) FILTER (WHERE kind = 'reversal'),
		COALESCE(sum(earning_usd), 0)::bigint, COALESCE(sum(reward), 0)::bigint
		FROM ledger_events WHERE `+partnerStatementWhere, publisherID, lo, hi).
		Scan(&p.Completes, &p.Reversed, &p.EarningUSD, &p.Reward)
	return p, classify(err)
}

// eventAtSQL formats an event's time as RFC 3339 in UTC with microseconds.
const eventAtSQL = `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// usdSQL formats ten-thousandths of a USD as a decimal string with four decimals.
func usdSQL(col string) string { return `(` + col + `::numeric / 10000)::numeric(24,4)::text` }

// OpenBuyerStatementCSV starts the CSV of a buyer's month: one row per event of
// BuyerStatement, in time order. Columns: event_id, at, kind, campaign_id, transaction_id,
// amount_usd (the charge; negative for a refund).
func (db *LedgerStore) OpenBuyerStatementCSV(ctx context.Context, buyerID int64, month time.Time) (*CSVExport, error) {
	lo, hi := monthBounds(month)
	return db.Insights.openLineExport(ctx, []string{"event_id", "at", "kind", "campaign_id", "transaction_id", "amount_usd"},
		`SELECT `+csvFieldSQL(`tid || '.' || seq`)+` || ',' || `+eventAtSQL+` || ',' || kind || ',' || campaign_id || ',' || `+
			csvFieldSQL(`tid`)+` || ',' || `+usdSQL("charge_usd")+`
		FROM ledger_events WHERE `+buyerStatementWhere+` ORDER BY at, session_id, seq`,
		[]any{buyerID, lo, hi})
}

// OpenPartnerStatementCSV starts the CSV of a partner's month: one row per event of
// PartnerStatement, in time order. Columns: event_id (the postback's), at, kind,
// transaction_id, payout_usd (negative for a reversal), reward.
func (db *LedgerStore) OpenPartnerStatementCSV(ctx context.Context, publisherID int64, month time.Time) (*CSVExport, error) {
	lo, hi := monthBounds(month)
	return db.Insights.openLineExport(ctx, []string{"event_id", "at", "kind", "transaction_id", "payout_usd", "reward"},
		`SELECT `+csvFieldSQL(`tid || '.' || seq`)+` || ',' || `+eventAtSQL+` || ',' || kind || ',' || `+
			csvFieldSQL(`tid`)+` || ',' || `+usdSQL("earning_usd")+` || ',' || reward
		FROM ledger_events WHERE `+partnerStatementWhere+` ORDER BY at, session_id, seq`,
		[]any{publisherID, lo, hi})
}

// MonthLine is one account's line of the exchange's month: what its events charged buyers,
// earned partners and left the exchange, in ten-thousandths of a USD.
type MonthLine struct {
	ID       int64
	Name     string
	Events   int64
	Charges  int64
	Earnings int64
	Margin   int64
}

// ExchangeMonth is the exchange's month for the operator: the totals and the lines per buyer
// and per partner, each in id order. Closed is when the month was closed (zero: open).
type ExchangeMonth struct {
	Month    time.Time
	Closed   time.Time
	Totals   MonthLine
	Buyers   []MonthLine
	Partners []MonthLine
}

// ExchangeMonth sums the ledger's events of the UTC month starting at month per buyer and
// per partner (events without a partner, none, sit on no partner's line).
func (db *LedgerStore) ExchangeMonth(ctx context.Context, month time.Time) (ExchangeMonth, error) {
	lo, hi := monthBounds(month)
	out := ExchangeMonth{Month: lo, Buyers: []MonthLine{}, Partners: []MonthLine{}}
	lines := func(sql string, dst *[]MonthLine) error {
		rows, err := db.Pool.Query(ctx, sql, lo, hi)
		if err != nil {
			return err
		}
		var l MonthLine
		_, err = pgx.ForEachRow(rows, []any{&l.ID, &l.Name, &l.Events, &l.Charges, &l.Earnings, &l.Margin}, func() error {
			*dst = append(*dst, l)
			out.Totals.Events += l.Events
			out.Totals.Charges += l.Charges
			out.Totals.Earnings += l.Earnings
			out.Totals.Margin += l.Margin
			return nil
		})
		return err
	}
	const sums = `count(*), COALESCE(sum(e.charge_usd), 0)::bigint, COALESCE(sum(e.earning_usd), 0)::bigint, COALESCE(sum(e.margin_usd), 0)::bigint`
	if err := lines(`SELECT e.buyer_id, b.email, `+sums+` FROM ledger_events e JOIN buyers b ON b.id = e.buyer_id
		WHERE e.at >= $1 AND e.at < $2 GROUP BY e.buyer_id, b.email ORDER BY e.buyer_id`, &out.Buyers); err != nil {
		return ExchangeMonth{}, classify(err)
	}
	totals := out.Totals
	if err := lines(`SELECT e.publisher_id, p.name, `+sums+` FROM ledger_events e JOIN publishers p ON p.id = e.publisher_id
		WHERE e.at >= $1 AND e.at < $2 GROUP BY e.publisher_id, p.name ORDER BY e.publisher_id`, &out.Partners); err != nil {
		return ExchangeMonth{}, classify(err)
	}
	out.Totals = totals // every event has a buyer: the buyers' lines are the whole month
	var closed *time.Time
	err := db.Pool.QueryRow(ctx, `SELECT closed_at FROM ledger_months WHERE month = $1::date`, lo).Scan(&closed)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return ExchangeMonth{}, classify(err)
	}
	if closed != nil {
		out.Closed = *closed
	}
	return out, nil
}

// ClosedMonth is a closed month and its totals when it closed.
type ClosedMonth struct {
	Month    string       `json:"month"`
	ClosedAt time.Time    `json:"closed_at"`
	Totals   LedgerTotals `json:"totals"`
}

// CloseMonth closes the UTC month starting at month (docs/payouts.md, "Statements"): its
// statements never change afterwards. Closing waits for every transaction writing a ledger
// event to end (a SHARE lock on ledger_events, held for no longer than the insert of the
// month's row), so that no event written before is left out and none written after is dated
// into it (migration 0053's trigger dates it by the database's clock); it waits at most 5 s
// for that lock, and a timeout is an error to retry. The month must have
// ended, and the history backfill must have run (BackfillLedger). Closing a closed month
// changes nothing and answers the same. created reports whether this call closed it.
func (db *LedgerStore) CloseMonth(ctx context.Context, month time.Time) (c ClosedMonth, created bool, err error) {
	lo, hi := monthBounds(month)
	err = db.Tx(ctx, func(tx pgx.Tx) error {
		var ended, backfilled bool
		if err := tx.QueryRow(ctx, `SELECT $1::timestamptz <= now(),
			(SELECT b.next_id > b.through FROM ledger_backfill b)`, hi).Scan(&ended, &backfilled); err != nil {
			return err
		}
		if !ended {
			return fault.Invalid("month", "has not ended yet")
		}
		if !backfilled {
			return fault.Invalid("month", "cannot close before the ledger's history is written (switchboard ledger backfill)")
		}
		// Writers queue behind the waiting lock: give up rather than stall callbacks behind
		// a long transaction (a reconcile of thousands of completes); closing again retries.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE ledger_events IN SHARE MODE`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO ledger_months (month) VALUES ($1::date) ON CONFLICT DO NOTHING`, lo)
		created = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return ClosedMonth{}, false, classify(err)
	}
	// The month no longer changes: its totals are summed outside the lock, once.
	if _, err := db.Pool.Exec(ctx, `UPDATE ledger_months m SET events = t.n, charge_usd = t.c, earning_usd = t.e, margin_usd = t.m
		FROM (SELECT count(*) AS n, COALESCE(sum(charge_usd), 0)::bigint AS c, COALESCE(sum(earning_usd), 0)::bigint AS e,
			COALESCE(sum(margin_usd), 0)::bigint AS m FROM ledger_events WHERE at >= $1 AND at < $2) t
		WHERE m.month = $1::date AND m.events IS NULL`, lo, hi); err != nil {
		return ClosedMonth{}, false, classify(err)
	}
	c.Month = lo.Format("2006-01")
	t := &c.Totals
	err = db.Pool.QueryRow(ctx, `SELECT closed_at, events, charge_usd, earning_usd, margin_usd FROM ledger_months WHERE month = $1::date`, lo).
		Scan(&c.ClosedAt, &t.Events, &t.Charges, &t.Earnings, &t.Margin)
	return c, created, classify(err)
}
