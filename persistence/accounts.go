package persistence

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/internal/fault"
)

// Environments a deployment and a token belong to.
const (
	EnvStaging = "staging"
	EnvLive    = "live"
)

// Scopes of a buyer token: a read token reads and never writes; a write token does both.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
)

// ValidScope reports whether scope names a buyer token scope.
func ValidScope(scope string) bool { return scope == ScopeRead || scope == ScopeWrite }

// Buyer is an authenticated buyer account as handlers see it. The secret signs links and
// callbacks and never leaves the server.
type Buyer struct {
	ID         int64  `json:"-"`
	CustomerID string `json:"customer_id"`
	Email      string `json:"email"`
	Name       string `json:"name,omitempty"`
	APISecret  string `json:"-"`
	// PreviousAPISecret is the secret a rotation replaced (buyer rotate-secret), which
	// still verifies callbacks until PreviousUntil; "" when there is none. Only
	// BuyerByCustomerID (the router's callback look-up) fills it.
	PreviousAPISecret string    `json:"-"`
	PreviousUntil     time.Time `json:"-"`
	// Scope is the scope of the token the buyer authenticated with (ScopeRead or
	// ScopeWrite); AuthenticateBuyer and ConsoleSessionOf fill it.
	Scope string `json:"-"`
}

// Publisher is a supply partner account.
type Publisher struct {
	ID           int64
	Name         string
	CurrencyName string
	ExchangeRate float64
	RevenueShare float64
	RedirectURL  string
	PostbackURL  string
	APISecret    string
	Environment  string
	// RerouteAttempts is how many times a chain of this publisher's participant may continue
	// to another survey after a screen-out (docs/rules.md §10); 0: re-routing is off.
	RerouteAttempts int
}

// MaxRerouteAttempts bounds Publisher.RerouteAttempts (docs/rules.md §10).
const MaxRerouteAttempts = 5

// TokenHash is the stored form of an API token.
func TokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// randomHex returns n random bytes as lower-case hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// ValidEnvironment reports whether env names a deployment.
func ValidEnvironment(env string) bool { return env == EnvStaging || env == EnvLive }

// CreateBuyer registers a buyer with a first token of environment env. It returns the buyer
// and the plain token, which exists only in this answer.
func (db *AccountStore) CreateBuyer(ctx context.Context, email, name, env string) (Buyer, string, error) {
	return db.CreateBuyerWith(ctx, email, name, env, BuyerCredentials{Token: randomHex(24), Secret: randomHex(16)})
}

// BuyerCredentials are chosen credentials of a buyer, for demo and benchmark data whose
// credentials a walk-through or a script uses, never for real accounts. An empty CustomerID
// is drawn at random, as for every other buyer.
type BuyerCredentials struct {
	CustomerID, Token, Secret string
}

// CreateBuyerWith is CreateBuyer with chosen credentials.
func (db *AccountStore) CreateBuyerWith(ctx context.Context, email, name, env string, c BuyerCredentials) (Buyer, string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if !strings.Contains(email, "@") || len(email) > 254 {
		return Buyer{}, "", fault.Invalid("email", "must be an e-mail address")
	}
	if !ValidEnvironment(env) {
		return Buyer{}, "", fault.Invalid("environment", "must be staging or live")
	}
	b := Buyer{CustomerID: c.CustomerID, Email: email, Name: name, APISecret: c.Secret}
	if b.CustomerID == "" {
		b.CustomerID = randomHex(16)
	}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO buyers (customer_id, email, name, api_secret) VALUES ($1,$2,$3,$4) RETURNING id`,
			b.CustomerID, b.Email, b.Name, b.APISecret).Scan(&b.ID)
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return fault.Invalid("email", "is already registered")
			}
			return err
		}
		h := TokenHash(c.Token)
		_, err = tx.Exec(ctx, `INSERT INTO buyer_tokens (buyer_id, environment, token_hash) VALUES ($1,$2,$3)`, b.ID, env, h[:])
		return err
	})
	if err != nil {
		return Buyer{}, "", err
	}
	return b, c.Token, nil
}

// IssueBuyerToken adds a write token of environment env to the buyer registered with email.
func (db *AccountStore) IssueBuyerToken(ctx context.Context, email, env string) (Buyer, string, error) {
	return db.IssueScopedBuyerToken(ctx, email, env, ScopeWrite)
}

// IssueScopedBuyerToken adds a token of environment env and scope (ScopeRead or ScopeWrite)
// to the buyer registered with email.
func (db *AccountStore) IssueScopedBuyerToken(ctx context.Context, email, env, scope string) (Buyer, string, error) {
	if !ValidEnvironment(env) {
		return Buyer{}, "", fault.Invalid("environment", "must be staging or live")
	}
	if !ValidScope(scope) {
		return Buyer{}, "", fault.Invalid("scope", "must be read or write")
	}
	var b Buyer
	err := db.Pool.QueryRow(ctx, `SELECT id, customer_id, email, name, api_secret FROM buyers WHERE email = $1`,
		strings.ToLower(strings.TrimSpace(email))).Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name, &b.APISecret)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return Buyer{}, "", fault.NotFound("no buyer with that email")
		}
		return Buyer{}, "", classify(err)
	}
	token := randomHex(24)
	h := TokenHash(token)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO buyer_tokens (buyer_id, environment, token_hash, scope) VALUES ($1,$2,$3,$4)`,
		b.ID, env, h[:], scope); err != nil {
		return Buyer{}, "", classify(err)
	}
	return b, token, nil
}

// AuthenticateBuyer finds the buyer holding token for env and checks that email is theirs.
// Any mismatch is the same 401: which part was wrong is not revealed.
func (db *AccountStore) AuthenticateBuyer(ctx context.Context, email, token, env string) (Buyer, error) {
	h := TokenHash(token)
	var b Buyer
	var tokenEnv string
	err := db.Pool.QueryRow(ctx, `SELECT b.id, b.customer_id, b.email, b.name, b.api_secret, t.environment, t.scope
		FROM buyer_tokens t JOIN buyers b ON b.id = t.buyer_id WHERE t.token_hash = $1`, h[:]).
		Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name, &b.APISecret, &tokenEnv, &b.Scope)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return Buyer{}, fault.Unauthorized("invalid credentials")
		}
		return Buyer{}, classify(err)
	}
	emailOK := subtle.ConstantTimeCompare([]byte(strings.ToLower(email)), []byte(b.Email)) == 1
	envOK := subtle.ConstantTimeCompare([]byte(tokenEnv), []byte(env)) == 1
	if !emailOK || !envOK {
		return Buyer{}, fault.Unauthorized("invalid credentials")
	}
	return b, nil
}

// BuyerByCustomerID finds a buyer by the public customer id used in callback URLs.
func (db *AccountStore) BuyerByCustomerID(ctx context.Context, customerID string) (Buyer, error) {
	var b Buyer
	var prev *string
	var until *time.Time
	err := db.Pool.QueryRow(ctx, `SELECT id, customer_id, email, name, api_secret, previous_api_secret, previous_secret_until
		FROM buyers WHERE customer_id = $1`,
		customerID).Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name, &b.APISecret, &prev, &until)
	if err != nil {
		return Buyer{}, classify(err)
	}
	if prev != nil && until != nil {
		b.PreviousAPISecret, b.PreviousUntil = *prev, *until
	}
	return b, nil
}

// HasBuyers reports whether any buyer is registered (the demo seeds only an empty database).
func (db *AccountStore) HasBuyers(ctx context.Context) (bool, error) {
	var found bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM buyers)`).Scan(&found)
	return found, classify(err)
}

// NewPublisher is what registering a supply partner takes.
type NewPublisher struct {
	Name, CurrencyName         string
	ExchangeRate, RevenueShare float64
	RedirectURL, PostbackURL   string
	Environment                string
	RerouteAttempts            int // 0 (off) to MaxRerouteAttempts
}

// CreatePublisher registers a supply partner and returns it with its plain API token.
func (db *AccountStore) CreatePublisher(ctx context.Context, p NewPublisher) (Publisher, string, error) {
	return db.CreatePublisherWith(ctx, p, randomHex(24), randomHex(16))
}

// Validate checks p before it is stored: fault.Invalid naming the first bad field. The
// exchange rate and revenue share are held to the money bounds (money.go) so that every
// reward they produce can be stored.
func (p NewPublisher) Validate() error {
	switch {
	case strings.TrimSpace(p.Name) == "":
		return fault.Invalid("name", "is required")
	case strings.TrimSpace(p.CurrencyName) == "":
		return fault.Invalid("currency_name", "is required")
	case !(p.ExchangeRate >= MinExchangeRate && p.ExchangeRate <= MaxExchangeRate):
		return fault.Invalid("exchange_rate", "must be between 0.0001 and 1000000000 (in-app units per USD)")
	case !(p.RevenueShare >= MinRevenueShare && p.RevenueShare <= MaxRevenueShare):
		return fault.Invalid("revenue_share", "must be between 0.0001 and 1 (a fraction of cpi)")
	case !isHTTPURL(p.RedirectURL):
		return fault.Invalid("redirect_url", "must be an absolute http(s) URL")
	case p.PostbackURL != "" && !isHTTPURL(p.PostbackURL):
		return fault.Invalid("postback_url", "must be an absolute http(s) URL")
	case !ValidEnvironment(p.Environment):
		return fault.Invalid("environment", "must be staging or live")
	case p.RerouteAttempts < 0 || p.RerouteAttempts > MaxRerouteAttempts:
		return fault.Invalid("reroute_attempts", "must be between 0 (off) and 5")
	}
	return nil
}

// CreatePublisherWith is CreatePublisher with a chosen token and secret, for demo data.
func (db *AccountStore) CreatePublisherWith(ctx context.Context, p NewPublisher, token, secret string) (Publisher, string, error) {
	if err := p.Validate(); err != nil {
		return Publisher{}, "", err
	}
	out := Publisher{Name: p.Name, CurrencyName: p.CurrencyName, ExchangeRate: p.ExchangeRate,
		RevenueShare: p.RevenueShare, RedirectURL: p.RedirectURL, PostbackURL: p.PostbackURL,
		APISecret: secret, Environment: p.Environment, RerouteAttempts: p.RerouteAttempts}
	h := TokenHash(token)
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO publishers (name, currency_name, exchange_rate, revenue_share,
			redirect_url, postback_url, api_secret, environment, token_hash, reroute_attempts)
			VALUES ($1,$2,$3,$4,$5,NULLIF($6,''),$7,$8,$9,$10) RETURNING id`,
			out.Name, out.CurrencyName, out.ExchangeRate, out.RevenueShare, out.RedirectURL, out.PostbackURL,
			out.APISecret, out.Environment, h[:], out.RerouteAttempts).Scan(&out.ID); err != nil {
			return err
		}
		return notifyPublisher(ctx, tx, out.ID)
	})
	if err != nil {
		return Publisher{}, "", classify(err)
	}
	return out, token, nil
}

const publisherColumns = `id, name, currency_name, exchange_rate::float8, revenue_share::float8, redirect_url,
	COALESCE(postback_url, ''), api_secret, environment, reroute_attempts`

func scanPublisher(row pgx.Row) (Publisher, error) {
	var p Publisher
	var reroute int16
	err := row.Scan(&p.ID, &p.Name, &p.CurrencyName, &p.ExchangeRate, &p.RevenueShare, &p.RedirectURL,
		&p.PostbackURL, &p.APISecret, &p.Environment, &reroute)
	p.RerouteAttempts = int(reroute)
	return p, err
}

// PublisherByID loads one publisher.
func (db *AccountStore) PublisherByID(ctx context.Context, id int64) (Publisher, error) {
	p, err := scanPublisher(db.Pool.QueryRow(ctx, `SELECT `+publisherColumns+` FROM publishers WHERE id = $1`, id))
	return p, classify(err)
}

// errNoBuyerToken is the answer to revoking or rotating a token the buyer does not hold.
var errNoBuyerToken = fault.NotFound("no such token for that buyer")

// RevokeBuyerToken deletes the token of the buyer registered with email, so that it
// authenticates no more. Servers that authenticated it a moment ago keep accepting it for
// at most their cache's lifetime (admin's authTTL, 30 s).
func (db *AccountStore) RevokeBuyerToken(ctx context.Context, email, token string) error {
	h := TokenHash(token)
	tag, err := db.Pool.Exec(ctx, `DELETE FROM buyer_tokens t USING buyers b
		WHERE t.buyer_id = b.id AND b.email = $1 AND t.token_hash = $2`, strings.ToLower(strings.TrimSpace(email)), h[:])
	if err != nil {
		return classify(err)
	}
	if tag.RowsAffected() == 0 {
		return errNoBuyerToken
	}
	return nil
}

// RevokeBuyerTokens deletes every token of the buyer registered with email and returns how
// many there were: the answer to a leaked account, after which `buyer token` issues anew.
func (db *AccountStore) RevokeBuyerTokens(ctx context.Context, email string) (int64, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	var n int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `SELECT id FROM buyers WHERE email = $1`, email).Scan(&id); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fault.NotFound("no buyer with that email")
			}
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM buyer_tokens WHERE buyer_id = $1`, id)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// RotateBuyerToken replaces a token of the buyer registered with email by a new one of the
// same environment, in one transaction, and returns the new plain token, which exists only
// in this answer (the database keeps its hash).
func (db *AccountStore) RotateBuyerToken(ctx context.Context, email, token string) (Buyer, string, string, error) {
	old := TokenHash(token)
	fresh := randomHex(24)
	h := TokenHash(fresh)
	var b Buyer
	var env string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM buyer_tokens t USING buyers b
			WHERE t.buyer_id = b.id AND b.email = $1 AND t.token_hash = $2
			RETURNING b.id, b.customer_id, b.email, b.name, t.environment, t.scope`,
			strings.ToLower(strings.TrimSpace(email)), old[:]).Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name, &env, &b.Scope)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoBuyerToken
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO buyer_tokens (buyer_id, environment, token_hash, scope) VALUES ($1,$2,$3,$4)`,
			b.ID, env, h[:], b.Scope)
		return err
	})
	if err != nil {
		return Buyer{}, "", "", classify(err)
	}
	return b, env, fresh, nil
}

// Publishers lists every publisher, in order of registration.
func (db *AccountStore) Publishers(ctx context.Context) ([]Publisher, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+publisherColumns+` FROM publishers ORDER BY id`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Publisher
	for rows.Next() {
		p, err := scanPublisher(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, p)
	}
	return out, classify(rows.Err())
}

// PublisherChange is an edit of a publisher's settings: nil fields stay as they are; an
// empty PostbackURL removes the postback. The environment is not editable: a publisher's
// token belongs to one deployment.
type PublisherChange struct {
	Name, CurrencyName, RedirectURL, PostbackURL *string
	ExchangeRate, RevenueShare                   *float64
	RerouteAttempts                              *int
}

// UpdatePublisher applies c to publisher id, held to the same checks as registering
// (NewPublisher.Validate), and returns the publisher as stored. Serve processes' supply
// interfaces reload it at once (PublisherChannel; the router's publisher cache follows within
// its 30 s); a new exchange rate
// or revenue share also prices completions recorded after it of sessions already started,
// since rewards are computed when a completion is recorded.
func (db *AccountStore) UpdatePublisher(ctx context.Context, id int64, c PublisherChange) (Publisher, error) {
	var out Publisher
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		p, err := scanPublisher(tx.QueryRow(ctx, `SELECT `+publisherColumns+` FROM publishers WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("no publisher with that id")
		}
		if err != nil {
			return err
		}
		n := NewPublisher{Name: p.Name, CurrencyName: p.CurrencyName, ExchangeRate: p.ExchangeRate,
			RevenueShare: p.RevenueShare, RedirectURL: p.RedirectURL, PostbackURL: p.PostbackURL, Environment: p.Environment,
			RerouteAttempts: p.RerouteAttempts}
		for _, s := range []struct {
			from *string
			to   *string
		}{{c.Name, &n.Name}, {c.CurrencyName, &n.CurrencyName}, {c.RedirectURL, &n.RedirectURL}, {c.PostbackURL, &n.PostbackURL}} {
			if s.from != nil {
				*s.to = *s.from
			}
		}
		if c.ExchangeRate != nil {
			n.ExchangeRate = *c.ExchangeRate
		}
		if c.RevenueShare != nil {
			n.RevenueShare = *c.RevenueShare
		}
		if c.RerouteAttempts != nil {
			n.RerouteAttempts = *c.RerouteAttempts
		}
		if err := n.Validate(); err != nil {
			return err
		}
		out, err = scanPublisher(tx.QueryRow(ctx, `UPDATE publishers SET name = $2, currency_name = $3, exchange_rate = $4,
			revenue_share = $5, redirect_url = $6, postback_url = NULLIF($7, ''), reroute_attempts = $8 WHERE id = $1 RETURNING `+publisherColumns,
			id, n.Name, n.CurrencyName, n.ExchangeRate, n.RevenueShare, n.RedirectURL, n.PostbackURL, n.RerouteAttempts))
		if err != nil {
			return err
		}
		return notifyPublisher(ctx, tx, id)
	})
	if err != nil {
		return Publisher{}, classify(err)
	}
	return out, nil
}

// RotatePublisherSecret gives publisher id a new API secret (the HMAC key of its signed
// requests and postbacks) and returns it. The secret is stored as it is, like every API
// secret, because the server must sign and verify with it; it is printed once and kept by
// the partner. Serve processes switch to it at once (PublisherChannel).
func (db *AccountStore) RotatePublisherSecret(ctx context.Context, id int64) (string, error) {
	secret := randomHex(16)
	if err := db.updatePublisher(ctx, id, `UPDATE publishers SET api_secret = $2 WHERE id = $1`, secret); err != nil {
		return "", err
	}
	return secret, nil
}

// RotatePublisherToken gives publisher id a new API token and returns it; only its hash is
// stored. The old token stops working at once on every serve process (PublisherChannel);
// the new one works at once.
func (db *AccountStore) RotatePublisherToken(ctx context.Context, id int64) (string, error) {
	token := randomHex(24)
	h := TokenHash(token)
	if err := db.updatePublisher(ctx, id, `UPDATE publishers SET token_hash = $2 WHERE id = $1`, h[:]); err != nil {
		return "", err
	}
	return token, nil
}

// PublisherChannel is the NOTIFY channel of publisher changes (payload: the publisher id):
// every serve process reloads its publishers when one is created, updated or given a new
// token or secret, instead of at its next periodic reload.
const PublisherChannel = "switchboard_publisher"

// notifyPublisher queues the NOTIFY of a change of publisher id inside tx: listeners hear of
// it when the change commits.
func notifyPublisher(ctx context.Context, tx pgx.Tx, id int64) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, PublisherChannel, strconv.FormatInt(id, 10))
	return err
}

// updatePublisher runs the one-row UPDATE sql on publisher id ($1; arg is $2) and notifies
// the change; no such publisher is fault.NotFound.
func (db *AccountStore) updatePublisher(ctx context.Context, id int64, sql string, arg any) error {
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sql, id, arg)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("no publisher with that id")
		}
		return notifyPublisher(ctx, tx, id)
	})
	return classify(err)
}

// Supplier is a supply partner as a buyer sees it: the publisher's id and name, all a
// campaign's excluded_supplier_ids need.
type Supplier struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Suppliers lists the publishers of environment env in id order: the supply partners a
// buyer whose token is of env may exclude from its campaigns.
func (db *AccountStore) Suppliers(ctx context.Context, env string) ([]Supplier, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, name FROM publishers WHERE environment = $1 ORDER BY id`, env)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Supplier])
	if out == nil {
		out = []Supplier{}
	}
	return out, classify(err)
}
