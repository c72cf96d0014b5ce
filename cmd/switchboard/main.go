// Command switchboard is Switchboard's one binary: the server, schema migrations, account
// registration, demo data and the benchmarks. It is the only place that reads flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap"
)

// command is one subcommand: its flags are registered by setup, then run executes.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, out io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "serve every interface on one listener", runServe},
		{"migrate status", "list applied and pending migrations, one line each, without changing anything", runMigrateStatus},
		{"migrate", "apply the schema and reference data, then exit", runMigrate},
		{"buyer create", "register a buyer and print its credentials", runBuyerCreate},
		{"buyer token create", "issue a further token for a buyer (--scope read or write, default write)", runBuyerTokenCreate},
		{"buyer token", "issue a further token for a buyer (--scope read or write, default write)", runBuyerToken},
		{"buyer revoke-token", "revoke one token of a buyer (--token) or all of them (--all); servers stop accepting it within 30 s", runBuyerRevokeToken},
		{"buyer rotate-token", "replace a buyer's token by a new one of the same environment and print it", runBuyerRotateToken},
		{"buyer webhook", "set (--url U) or remove (--clear) the URL a buyer's campaign events are POSTed to", runBuyerWebhook},
		{"buyer rotate-secret", "give a buyer a new API secret and print it once (--email E); the old one still verifies its callbacks for --grace (24h)", runBuyerRotateSecret},
		{"publisher create", "register a supply partner and print its credentials", runPublisherCreate},
		{"publisher list", "list the supply partners and their settings (never tokens or secrets)", runPublisherList},
		{"publisher update", "change a supply partner's name, currency, exchange rate, revenue share or URLs (--id N)", runPublisherUpdate},
		{"publisher rotate-secret", "give a supply partner a new API secret and print it once (--id N)", runPublisherRotate("secret")},
		{"publisher rotate-token", "give a supply partner a new API token and print it once (--id N)", runPublisherRotate("token")},
		{"keys rotate", "give the offer-token service key new bytes; servers accept the previous key's tokens for their lifetime, then retire it", runKeysRotate},
		{"keys retire", "retire every previous offer-token service key at once (after a leak): servers refuse the tokens they signed", runKeysRetire},
		{"operator create", "register a web console operator and print its token once (--name N, --role viewer or admin, default admin)", runOperatorCreate},
		{"operator list", "list the web console operators and their live sessions (never tokens)", runOperatorList},
		{"operator revoke", "remove a web console operator (--id N): its token and console sessions stop at once", runOperatorRevoke},
		{"seed-demo", "fill an empty database with demo data and print its credentials", runSeedDemo},
		{"quality show", "print a participant's quality decisions and signals (--user U --publisher P)", runQualityShow},
		{"quality unblock", "lift a participant's quality block on every server (--user U --publisher P)", runQualityUnblock},
		{"simulate", "run the market simulator under each allocation policy on several seeds (docs/allocation.md)", runSimulate},
		{"postbacks list", "list undelivered postbacks and webhooks as JSON (--status pending,retrying,dead: one or more; --publisher P or --buyer B)", runPostbacksList},
		{"postbacks retry", "make dead-lettered postbacks and webhooks owed again: retrying, due now (--id N or --all, --publisher P or --buyer B)", runPostbacksRetry},
		{"ledger check", "recompute every ledger figure from the outcomes and postbacks and print the differences as JSON; exit 1 on any (--month YYYY-MM)", runLedgerCheck},
		{"ledger backfill", "write the ledger of sessions decided before it existed, in batches of --batch sessions from a stored watermark; safe while serving, resumable, idempotent", runLedgerBackfill},
		{"statements close", "close a month (--month YYYY-MM, ended): its statements never change afterwards; idempotent; prints its totals as JSON", runStatementsClose},
		{"sessions partitions", "create the partitions of sessions due above the id sequence, then list each with the time it covers", runSessionsPartitions},
		{"bench sizes", "compare offers against the floor and peak memory across market sizes, from the results.json of earlier bench runs", runBenchSizes},
		{"bench", "run the load generator and engine benchmarks, write docs/performance.md", runBench},
		{"version", "print the module version, VCS revision and time, and Go version of this binary", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The first signal asks the command to stop in order (a server drains, a bench removes its
	// cluster); a second one ends the process at once.
	context.AfterFunc(ctx, stop)
	if err := dispatch(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, args []string, out io.Writer) error {
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c.run(ctx, args[len(words):], out)
		}
	}
	var b strings.Builder
	b.WriteString("usage: switchboard <command> [flags]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-24s %s\n", c.name, c.usage)
	}
	return errors.New(b.String())
}

// flags is a FlagSet whose every flag also reads an environment variable: --database-url
// reads DATABASE_URL, any other --name reads SWITCHBOARD_NAME (dashes become underscores).
type flags struct {
	*flag.FlagSet
}

func newFlags(name string) flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if flagSetMade != nil {
		flagSetMade(fs)
	}
	return flags{fs}
}

// flagSetMade, when set, sees every command's FlagSet as it is made: the test that writes
// docs/configuration.md collects the flags with it.
var flagSetMade func(*flag.FlagSet)

// envName is the environment variable that backs a flag.
func envName(flagName string) string {
	if flagName == "database-url" {
		return "DATABASE_URL"
	}
	return "SWITCHBOARD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse reads args, then fills every flag not given on the command line from its variable.
func (f flags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if given[fl.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(fl.Name)); ok {
			if e := fl.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(fl.Name), v, e)
			}
		}
	})
	if err == nil && f.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", f.Arg(0))
	}
	return err
}

// printJSON writes v as one indented JSON object.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newLogger logs JSON, or a console format when stderr is a terminal.
func newLogger() *zap.Logger {
	var cfg zap.Config
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		cfg = zap.NewDevelopmentConfig()
	} else {
		cfg = zap.NewProductionConfig()
		cfg.Sampling = nil
	}
	if lvl := os.Getenv("SWITCHBOARD_LOG_LEVEL"); lvl != "" {
		if l, err := zap.ParseAtomicLevel(lvl); err == nil {
			cfg.Level = l
		}
	}
	log, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return log.Named("switchboard")
}
