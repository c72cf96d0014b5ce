package persistence

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Cents is a USD amount in cents. It is written to JSON as a string with two decimals
// ("2.35"), the form the buyer interface uses for cpi.
type Cents int64

// String formats c as dollars with two decimals.
func (c Cents) String() string {
	neg := c < 0
	if neg {
		c = -c
	}
	s := strconv.FormatInt(int64(c)/100, 10) + "." + strconv.FormatInt(int64(c)%100/10, 10) + strconv.FormatInt(int64(c)%10, 10)
	if neg {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes c as a JSON string with two decimals.
func (c Cents) MarshalJSON() ([]byte, error) { return []byte(`"` + c.String() + `"`), nil }

// queryRower is what a read needs: a pool, a connection or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// RateCardCents prices a campaign of the given length of interview (minutes) and incidence
// (percent) from the rate_card table: the row with the smallest loi_max ≥ loi and, among
// those, the largest incidence_min ≤ incidence. Outside the card (an interview longer than
// the card's longest row) the dearest applicable row prices it.
func RateCardCents(ctx context.Context, q queryRower, loi, incidence int) (Cents, error) {
	var cents int64
	err := q.QueryRow(ctx, `SELECT COALESCE(
		(SELECT cpi_cents FROM rate_card WHERE loi_max >= $1 AND incidence_min <= $2
		  ORDER BY loi_max ASC, incidence_min DESC LIMIT 1),
		(SELECT max(cpi_cents) FROM rate_card WHERE incidence_min <= $2),
		(SELECT max(cpi_cents) FROM rate_card), 0)`, loi, incidence).Scan(&cents)
	if err != nil {
		return 0, classify(err)
	}
	return Cents(cents), nil
}

// Price is the campaign price rule of docs/rules.md §4: max(rate card price, bid).
func Price(rate Cents, bid *Cents) Cents {
	if bid != nil && *bid > rate {
		return *bid
	}
	return rate
}
