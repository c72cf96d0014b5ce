package persistence

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// Operator is a person who runs the exchange and signs in to the console's operator view.
type Operator struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"` // RoleViewer or RoleAdmin
}

// Operator roles: a viewer reads the operator view; an admin also acts from it (unblocks).
const (
	RoleViewer = "viewer"
	RoleAdmin  = "admin"
)

// ValidRole reports whether role names an operator role.
func ValidRole(role string) bool { return role == RoleViewer || role == RoleAdmin }

// CreateOperator registers an admin operator and returns it with its token, which exists
// only in this answer (the table keeps its SHA-256).
func (db *OperatorStore) CreateOperator(ctx context.Context, name string) (Operator, string, error) {
	return db.CreateOperatorWithRole(ctx, name, RoleAdmin)
}

// CreateOperatorWithRole is CreateOperator with role RoleViewer or RoleAdmin.
func (db *OperatorStore) CreateOperatorWithRole(ctx context.Context, name, role string) (Operator, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return Operator{}, "", fault.Invalid("name", "must be 1 to 200 characters")
	}
	if !ValidRole(role) {
		return Operator{}, "", fault.Invalid("role", "must be viewer or admin")
	}
	token := randomHex(24)
	h := TokenHash(token)
	o := Operator{Name: name, Role: role}
	err := db.Pool.QueryRow(ctx, `INSERT INTO operators (name, token_hash, role) VALUES ($1, $2, $3) RETURNING id`, name, h[:], role).Scan(&o.ID)
	if err != nil {
		return Operator{}, "", classify(err)
	}
	return o, token, nil
}

// AuthenticateOperator finds the operator holding token; any other token is a 401. The
// look-up is by the token's hash, so its time says nothing about how close a guess came.
func (db *OperatorStore) AuthenticateOperator(ctx context.Context, token string) (Operator, error) {
	h := TokenHash(token)
	var o Operator
	err := db.Pool.QueryRow(ctx, `SELECT id, name, role FROM operators WHERE token_hash = $1`, h[:]).Scan(&o.ID, &o.Name, &o.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return Operator{}, fault.Unauthorized("invalid credentials")
	}
	return o, classify(err)
}

// ConsoleSession is a signed-in console browser: a buyer's (Buyer.ID > 0) or an
// operator's (Operator.ID > 0).
type ConsoleSession struct {
	Buyer     Buyer
	Operator  Operator
	ExpiresAt time.Time
}

// consoleSessionHash is the stored form of a session id.
func consoleSessionHash(id string) []byte {
	h := sha256.Sum256([]byte("console-session\x00" + id))
	return h[:]
}

// ConsoleSignIn is who a console session is for: a buyer with the API token they signed in
// with (the session ends with that token), or an operator.
type ConsoleSignIn struct {
	BuyerID    int64
	BuyerToken string
	OperatorID int64
}

// CreateConsoleSession opens a session for who that lasts ttl, and returns its id, which
// exists only in this answer (the cookie). Sessions expired for a day are deleted on the way.
func (db *OperatorStore) CreateConsoleSession(ctx context.Context, who ConsoleSignIn, ttl time.Duration) (string, time.Time, error) {
	id := randomHex(32)
	var expires time.Time
	h := TokenHash(who.BuyerToken)
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at < now() - interval '1 day'`); err != nil {
			return err
		}
		var tokenID *int64
		if who.BuyerID != 0 {
			err := tx.QueryRow(ctx, `SELECT id FROM buyer_tokens WHERE token_hash = $1 AND buyer_id = $2`, h[:], who.BuyerID).Scan(&tokenID)
			if errors.Is(err, pgx.ErrNoRows) {
				return fault.Unauthorized("invalid credentials") // revoked meanwhile
			} else if err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `INSERT INTO console_sessions (id_hash, buyer_id, buyer_token_id, operator_id, expires_at)
			VALUES ($1, NULLIF($2, 0), $3, NULLIF($4, 0), now() + $5::interval) RETURNING expires_at`,
			consoleSessionHash(id), who.BuyerID, tokenID, who.OperatorID, ttl.String()).Scan(&expires)
	})
	return id, expires, err
}

// ConsoleSessionOf returns the live session of id: 401 when there is none or it expired.
func (db *OperatorStore) ConsoleSessionOf(ctx context.Context, id string) (ConsoleSession, error) {
	var s ConsoleSession
	var buyerID, operatorID *int64
	var bCustomer, bEmail, bName, bSecret, bScope, oName, oRole *string
	err := db.Pool.QueryRow(ctx, `SELECT s.expires_at, s.buyer_id, b.customer_id, b.email, b.name, b.api_secret, t.scope,
			s.operator_id, o.name, o.role
		FROM console_sessions s LEFT JOIN buyers b ON b.id = s.buyer_id LEFT JOIN operators o ON o.id = s.operator_id
		LEFT JOIN buyer_tokens t ON t.id = s.buyer_token_id
		WHERE s.id_hash = $1 AND s.expires_at > now()`, consoleSessionHash(id)).
		Scan(&s.ExpiresAt, &buyerID, &bCustomer, &bEmail, &bName, &bSecret, &bScope, &operatorID, &oName, &oRole)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, fault.Unauthorized("no session")
	}
	if err != nil {
		return s, classify(err)
	}
	if buyerID != nil {
		s.Buyer = Buyer{ID: *buyerID, CustomerID: *bCustomer, Email: *bEmail, Name: *bName, APISecret: *bSecret, Scope: ScopeRead}
		if bScope != nil {
			s.Buyer.Scope = *bScope
		}
	}
	if operatorID != nil {
		s.Operator = Operator{ID: *operatorID, Name: *oName, Role: *oRole}
	}
	return s, nil
}

// EndConsoleSession deletes the session of id (sign-out); an unknown id is no error.
func (db *OperatorStore) EndConsoleSession(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, consoleSessionHash(id))
	return classify(err)
}

// DayCount is one UTC day's count.
type DayCount struct {
	Day   time.Time `json:"day"`
	Count int64     `json:"count"`
}

// CampaignStart is when a campaign's field time is counted from: its creation.
func (db *InsightStore) CampaignStart(ctx context.Context, campaignID int64) (time.Time, error) {
	var t time.Time
	err := db.Pool.QueryRow(ctx, `SELECT created_at FROM campaigns WHERE id = $1`, campaignID).Scan(&t)
	return t.UTC(), classify(err)
}

// CampaignDailyCompletes counts a campaign's accepted completes (test sessions excluded)
// per UTC day of their callback, days without completes left out, oldest first. The caller
// has checked the campaign's owner.
func (db *InsightStore) CampaignDailyCompletes(ctx context.Context, campaignID int64) ([]DayCount, error) {
	rows, err := db.Pool.Query(ctx, `SELECT date_trunc('day', s.outcome_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', count(*)
		FROM sessions s WHERE s.campaign_id = $1 AND NOT s.is_test AND s.outcome = 'complete' AND NOT s.rejected
			AND NOT s.overage AND s.outcome_at IS NOT NULL
		GROUP BY 1 ORDER BY 1`, campaignID)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DayCount, error) {
		var d DayCount
		err := r.Scan(&d.Day, &d.Count)
		d.Day = d.Day.UTC()
		return d, err
	})
	return out, classify(err)
}

// OutcomeCount is how many of a campaign's sessions ended one way.
type OutcomeCount struct {
	Outcome string `json:"outcome"` // complete, rejected, overage, over_quota, quality_term, disqualified, in_progress
	Count   int64  `json:"count"`
}

// CampaignOutcomes counts a campaign's sessions (test sessions excluded) by how they ended:
// the drop-off of its entries. A rejected complete is "rejected", a late complete its
// quotas or daily cap had no room for "overage" (docs/rules.md §5); a session without outcome
// "in_progress". The caller has checked the campaign's owner.
func (db *InsightStore) CampaignOutcomes(ctx context.Context, campaignID int64) ([]OutcomeCount, error) {
	rows, err := db.Pool.Query(ctx, `SELECT CASE WHEN s.outcome IS NULL THEN 'in_progress'
			WHEN s.outcome = 'complete' AND s.rejected THEN 'rejected'
			WHEN s.outcome = 'complete' AND s.overage THEN 'overage' ELSE s.outcome END AS o, count(*)
		FROM sessions s WHERE s.campaign_id = $1 AND NOT s.is_test GROUP BY 1 ORDER BY 2 DESC, 1`, campaignID)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutcomeCount, error) {
		var o OutcomeCount
		return o, r.Scan(&o.Outcome, &o.Count)
	})
	return out, classify(err)
}

// MarketDay is one UTC day of the whole exchange, by the day sessions entered (test
// sessions excluded), with the GET /campaigns answers served that day.
type MarketDay struct {
	Day time.Time `json:"day"`
	// Offers is the GET /campaigns answers served to every partner that day
	// (publisher_offer_hours, flushed by each serve process about once a minute).
	Offers    int64 `json:"offers"`
	Entries   int64 `json:"entries"`
	Completes int64 `json:"completes"` // accepted
	// Revenue is what buyers owe for the day's accepted completes (their CPI).
	Revenue Cents `json:"revenue"`
	// PayoutUSD is what partners are owed for them, four decimals.
	PayoutUSD string `json:"payout_usd"`
	// Overages are the day's late completes that their quotas or daily cap had no room for
	// (docs/rules.md §5): no buyer is charged for them, and OveragePayoutUSD, what their
	// partners are owed, is the exchange's own cost.
	Overages         int64  `json:"overages"`
	OveragePayoutUSD string `json:"overage_payout_usd"`
}

// MarketDays totals the exchange's sessions that entered since from, and the offers served
// in the hours that began since from (callers pass the start of a day), per UTC day, oldest
// first; days with neither are left out.
func (db *InsightStore) MarketDays(ctx context.Context, from time.Time) ([]MarketDay, error) {
	rows, err := db.Pool.Query(ctx, `WITH s AS (SELECT date_trunc('day', s.entered_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
			count(*) AS entries,
			count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND NOT s.overage) AS c,
			COALESCE(sum(c.cpi_cents) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND NOT s.overage), 0)::bigint AS revenue,
			COALESCE(sum(s.payout_usd) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND NOT s.overage), 0)::numeric(14,4)::text AS usd,
			count(*) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND s.overage) AS oc,
			COALESCE(sum(s.payout_usd) FILTER (WHERE s.outcome = 'complete' AND NOT s.rejected AND s.overage), 0)::numeric(14,4)::text AS ousd
		FROM campaigns c JOIN sessions s ON s.campaign_id = c.id AND NOT s.is_test AND s.entered_at >= $1
		GROUP BY 1),
		o AS (SELECT date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, sum(offers)::bigint AS offers
			FROM publisher_offer_hours WHERE hour >= $1
			GROUP BY 1)
		SELECT COALESCE(s.day, o.day), COALESCE(o.offers, 0), COALESCE(s.entries, 0), COALESCE(s.c, 0),
			COALESCE(s.revenue, 0), COALESCE(s.usd, '0.0000'), COALESCE(s.oc, 0), COALESCE(s.ousd, '0.0000')
		FROM s FULL JOIN o ON o.day = s.day
		ORDER BY 1`, from)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MarketDay, error) {
		var d MarketDay
		var revenue int64
		err := r.Scan(&d.Day, &d.Offers, &d.Entries, &d.Completes, &revenue, &d.PayoutUSD, &d.Overages, &d.OveragePayoutUSD)
		d.Revenue = Cents(revenue)
		d.Day = d.Day.UTC()
		return d, err
	})
	return out, classify(err)
}

// ActiveQualityBlocks lists the quality blocks in force (neither expired nor lifted),
// newest first, at most limit.
func (db *QualityStore) ActiveQualityBlocks(ctx context.Context, limit int) ([]QualityBlock, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+qualityBlockColumns+` FROM quality_blocks
		WHERE unblocked_at IS NULL AND expires_at > now() ORDER BY blocked_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QualityBlock, error) { return scanQualityBlock(r) })
	return out, classify(err)
}
