package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
)

func runBuyerCreate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer create")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
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
	b, token, err := db.CreateBuyer(ctx, *email, *name, *env)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "email": b.Email,
		"environment": *env, "api_token": token, "api_secret": b.APISecret})
}

func runBuyerToken(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("buyer token")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	email := f.String("email", "", "the buyer's e-mail address (required)")
	env := f.String("environment", persistence.EnvLive, "staging or live")
	if err := f.parse(args); err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	b, token, err := db.IssueBuyerToken(ctx, *email, *env)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"customer_id": b.CustomerID, "environment": *env, "api_token": token})
}

func runPublisherCreate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("publisher create")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	var p persistence.NewPublisher
	f.StringVar(&p.Name, "name", "", "the partner's name (required)")
	f.StringVar(&p.CurrencyName, "currency-name", "", "name of the in-app currency (required)")
	f.Float64Var(&p.ExchangeRate, "exchange-rate", 0, "in-app currency units per USD, 0.0001 to 1e9 (required)")
	f.Float64Var(&p.RevenueShare, "revenue-share", 0, "fraction of cpi paid to the partner, 0.0001 to 1 (required)")
	f.StringVar(&p.RedirectURL, "redirect-url", "", "where participants return after a survey (required)")
	f.StringVar(&p.PostbackURL, "postback-url", "", "server-to-server postback URL")
	f.StringVar(&p.Environment, "environment", persistence.EnvStaging, "staging or live")
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
	pub, token, err := db.CreatePublisher(ctx, p)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"publisher_id": pub.ID, "api_token": token,
		"api_secret": pub.APISecret, "environment": pub.Environment})
}

func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("migrate")
	dbURL := f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
	if err := f.parse(args); err != nil {
		return err
	}
	log := newLogger()
	u, err := databaseURL(ctx, *dbURL, log)
	if err != nil {
		return err
	}
	db, err := persistence.Open(ctx, u, log.Named("db"))
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
