package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/internal/egress"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

func runBuyerCreate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer create")
	dbURL := databaseFlag(f)
	email := f.String("email", "", "the buyer's e-mail address (required)")
	name := f.String("name", "", "the buyer's name")
	env := f.String("environment", persistence.EnvStaging, "staging or live: the first token's environment")
	if err := f.parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	log := newLogger()
	db, err := openDB(ctx, *dbURL, log)
	if err != nil {
		return err
	}
	defer db.Close()
	b, token, err := db.Accounts.CreateBuyer(ctx, *email, *name, *env)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "email": b.Email,
		"environment": *env, "api_token": token, "api_secret": b.APISecret})
}

func runBuyerToken(ctx context.Context, args []string, out io.Writer) error {
	return issueBuyerToken(ctx, "buyer token", args, out)
}

// runBuyerTokenCreate is `buyer token create`, the same as `buyer token`.
func runBuyerTokenCreate(ctx context.Context, args []string, out io.Writer) error {
	return issueBuyerToken(ctx, "buyer token create", args, out)
}

// issueBuyerToken issues a further token of --environment and --scope for the buyer of
// --email and prints it once.
func issueBuyerToken(ctx context.Context, name string, args []string, out io.Writer) error {
	f := newFlags(name)
	dbURL := databaseFlag(f)
	email := f.String("email", "", "the buyer's e-mail address (required)")
	env := f.String("environment", persistence.EnvLive, "staging or live")
	scope := f.String("scope", persistence.ScopeWrite, "read (every read, no write: 403 on the API's writes, a read-only console) or write")
	if err := f.parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	if !persistence.ValidScope(*scope) {
		return errors.New("--scope must be read or write")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	b, token, err := db.Accounts.IssueScopedBuyerToken(ctx, *email, *env, *scope)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "environment": *env, "scope": *scope, "api_token": token})
}

func runPublisherCreate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("publisher create")
	dbURL := databaseFlag(f)
	var p persistence.NewPublisher
	f.StringVar(&p.Name, "name", "", "the partner's name (required)")
	f.StringVar(&p.CurrencyName, "currency-name", "", "name of the in-app currency (required)")
	f.Float64Var(&p.ExchangeRate, "exchange-rate", 0, "in-app currency units per USD, 0.0001 to 1e9 (required)")
	f.Float64Var(&p.RevenueShare, "revenue-share", 0, "fraction of cpi paid to the partner, 0.0001 to 1 (required)")
	f.StringVar(&p.RedirectURL, "redirect-url", "", "where participants return after a survey (required)")
	f.StringVar(&p.PostbackURL, "postback-url", "", "server-to-server postback URL")
	f.StringVar(&p.Environment, "environment", persistence.EnvStaging, "staging or live")
	f.IntVar(&p.RerouteAttempts, "reroute-attempts", 0, "re-route a screen-out to another survey up to this many times, 0 (off) to 5 (docs/rules.md §10)")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return flagError(err)
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	pub, token, err := db.Accounts.CreatePublisher(ctx, p)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"publisher_id": pub.ID, "api_token": token,
		"api_secret": pub.APISecret, "environment": pub.Environment})
}

func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("migrate")
	dbURL := databaseFlag(f)
	if err := f.parse(args); err != nil {
		return err
	}
	db, err := connectDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	if applied == nil {
		applied = []int{}
	}
	return printJSON(out, map[string]any{"applied": applied})
}

// flagError restates a validation error of a field as one of the flag that sets it
// (exchange_rate → --exchange-rate); any other error is returned as it is.
func flagError(err error) error {
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid || f.Field == "" {
		return err
	}
	return fmt.Errorf("--%s %s", strings.ReplaceAll(f.Field, "_", "-"), strings.TrimPrefix(f.Message, f.Field+" "))
}

// runBuyerRevokeToken deletes one token of a buyer (--token) or all of them (--all).
func runBuyerRevokeToken(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer revoke-token")
	dbURL := databaseFlag(f)
	email := f.String("email", "", "the buyer's e-mail address (required)")
	token := f.String("token", "", "the API token to revoke (or --all)")
	all := f.Bool("all", false, "revoke every token of the buyer")
	if err := f.parse(args); err != nil {
		return err
	}
	switch {
	case *email == "":
		return errors.New("--email is required")
	case (*token == "") == !*all:
		return errors.New("give exactly one of --token and --all")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	n := int64(1)
	if *all {
		n, err = db.Accounts.RevokeBuyerTokens(ctx, *email)
	} else {
		err = db.Accounts.RevokeBuyerToken(ctx, *email, *token)
	}
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"revoked": n, "effective_within": "30s"})
}

// runBuyerRotateToken replaces a buyer's token by a new one of the same environment.
func runBuyerRotateToken(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer rotate-token")
	dbURL := databaseFlag(f)
	email := f.String("email", "", "the buyer's e-mail address (required)")
	token := f.String("token", "", "the API token to replace (required)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *email == "" || *token == "" {
		return errors.New("--email and --token are required")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	b, env, fresh, err := db.Accounts.RotateBuyerToken(ctx, *email, *token)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "environment": env, "api_token": fresh})
}

// publisherView is a publisher as the CLI prints it: never its token or secret.
func publisherView(p persistence.Publisher) map[string]any {
	return map[string]any{"publisher_id": p.ID, "name": p.Name, "environment": p.Environment,
		"currency_name": p.CurrencyName, "exchange_rate": p.ExchangeRate, "revenue_share": p.RevenueShare,
		"redirect_url": p.RedirectURL, "postback_url": p.PostbackURL, "reroute_attempts": p.RerouteAttempts}
}

func runPublisherList(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("publisher list")
	dbURL := databaseFlag(f)
	db, err := parseOpenDB(ctx, f, args, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.Accounts.Publishers(ctx)
	if err != nil {
		return err
	}
	views := make([]map[string]any, 0, len(list))
	for _, p := range list {
		views = append(views, publisherView(p))
	}
	return printJSON(out, map[string]any{"publishers": views})
}

// runPublisherUpdate changes the settings given as flags and leaves the others.
func runPublisherUpdate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("publisher update")
	dbURL := databaseFlag(f)
	id := f.Int64("id", 0, "the publisher's id (required)")
	var c persistence.PublisherChange
	strFlag := func(dst **string, name, usage string) {
		f.Func(name, usage, func(v string) error { *dst = &v; return nil })
	}
	numFlag := func(dst **float64, name, usage string) {
		f.Func(name, usage, func(v string) error {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return errors.New("must be a number")
			}
			*dst = &x
			return nil
		})
	}
	strFlag(&c.Name, "name", "the partner's name")
	strFlag(&c.CurrencyName, "currency-name", "name of the in-app currency")
	numFlag(&c.ExchangeRate, "exchange-rate", "in-app currency units per USD, 0.0001 to 1e9")
	numFlag(&c.RevenueShare, "revenue-share", "fraction of cpi paid to the partner, 0.0001 to 1")
	strFlag(&c.RedirectURL, "redirect-url", "where participants return after a survey")
	strFlag(&c.PostbackURL, "postback-url", "server-to-server postback URL (empty: none)")
	f.Func("reroute-attempts", "re-route a screen-out to another survey up to this many times, 0 (off) to 5 (docs/rules.md §10)",
		func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errors.New("must be a whole number from 0 to 5")
			}
			c.RerouteAttempts = &n
			return nil
		})
	if err := f.parse(args); err != nil {
		return err
	}
	if *id <= 0 {
		return errors.New("--id is required")
	}
	if c == (persistence.PublisherChange{}) {
		return errors.New("nothing to change: give at least one of --name, --currency-name, --exchange-rate, --revenue-share, --redirect-url, --postback-url, --reroute-attempts")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.Accounts.UpdatePublisher(ctx, *id, c)
	if err != nil {
		return flagError(err)
	}
	return printJSON(out, publisherView(p))
}

// runPublisherRotate gives a publisher a new API secret (which "secret") or token ("token")
// and prints it, the only time it is shown.
func runPublisherRotate(which string) func(context.Context, []string, io.Writer) error {
	return func(ctx context.Context, args []string, out io.Writer) error {
		f := newFlags("publisher rotate-" + which)
		dbURL := databaseFlag(f)
		id := f.Int64("id", 0, "the publisher's id (required)")
		if err := f.parse(args); err != nil {
			return err
		}
		if *id <= 0 {
			return errors.New("--id is required")
		}
		db, err := openDB(ctx, *dbURL, newLogger())
		if err != nil {
			return err
		}
		defer db.Close()
		if which == "token" {
			token, err := db.Accounts.RotatePublisherToken(ctx, *id)
			if err != nil {
				return err
			}
			return printJSON(out, map[string]any{"publisher_id": *id, "api_token": token})
		}
		secret, err := db.Accounts.RotatePublisherSecret(ctx, *id)
		if err != nil {
			return err
		}
		return printJSON(out, map[string]any{"publisher_id": *id, "api_secret": secret})
	}
}

// runBuyerWebhook registers (--url) or removes (--clear, or an empty --url) the URL a buyer's
// campaign events are POSTed to, signed with the buyer's api_secret.
func runBuyerWebhook(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer webhook")
	dbURL := databaseFlag(f)
	email := f.String("email", "", "the buyer's e-mail address (required)")
	u := f.String("url", "", "the absolute http(s) URL events are POSTed to (empty: remove)")
	remove := f.Bool("clear", false, "remove the buyer's webhook URL")
	allowPrivate := f.Bool("outbound-allow-private", false, "accept a URL whose host is or resolves only to loopback, private or link-local addresses, as a server run with --outbound-allow-private delivers to (default: refused, as PUT /api/v1/webhook refuses it)")
	if err := f.parse(args); err != nil {
		return err
	}
	switch {
	case *email == "":
		return errors.New("--email is required")
	case *remove && *u != "":
		return errors.New("give either --url or --clear")
	}
	if *u != "" {
		if err := persistence.ValidateWebhookURL(*u); err != nil {
			return flagError(err)
		}
		if err := payout.CheckWebhookURL(ctx, egress.Policy{AllowPrivate: *allowPrivate}, *u); err != nil {
			return flagError(err)
		}
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := db.Accounts.SetBuyerWebhookByEmail(ctx, *email, *u)
	if err != nil {
		return flagError(err)
	}
	var view any
	if *u != "" {
		view = *u
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "webhook_url": view})
}
