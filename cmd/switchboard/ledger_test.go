package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestLedgerCheckCommand: `ledger check` prints the check as JSON, passes on a ledger that
// matches its outcomes and fails, naming the postback, on one that tells of no event.
func TestLedgerCheckCommand(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := openDB(ctx, url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := func(args ...string) (persistence.LedgerCheck, error) {
		t.Helper()
		var out bytes.Buffer
		err := dispatch(ctx, append(append([]string{"ledger", "check"}, args...), "--database-url", url), &out)
		var c persistence.LedgerCheck
		if out.Len() > 0 {
			if jerr := json.Unmarshal(out.Bytes(), &c); jerr != nil {
				t.Fatalf("output %q: %v", out.String(), jerr)
			}
		}
		return c, err
	}
	if c, err := run(); err != nil || len(c.Differences) != 0 {
		t.Fatalf("empty ledger: %+v, %v", c, err)
	}
	if _, err := run("--month", "2026-13"); err == nil || !strings.Contains(err.Error(), "--month") {
		t.Errorf("bad month: %v, want an error naming --month", err)
	}
	pub, _, err := db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "P", CurrencyName: "c", ExchangeRate: 1,
		RevenueShare: 0.5, RedirectURL: "https://p.test/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url, event_id)
		VALUES ('t-1', 'outcome', $1, 'https://p.test/pb?tid=t-1&status=complete&reward=1&payout_usd=1.0000&event_id=t-1.1&sech=0', 't-1.1')`,
		pub.ID); err != nil {
		t.Fatal(err)
	}
	c, err := run()
	if err == nil || len(c.Differences) != 1 || !strings.HasPrefix(c.Differences[0].What, "postback without event") {
		t.Errorf("a postback of no event: %+v, %v; want one difference and an error", c, err)
	}
	if c, err := run("--month", "2001-01"); err != nil || len(c.Differences) != 0 {
		t.Errorf("another month: %+v, %v; want no difference", c, err)
	}
}

// TestStatementsCloseCommand: `statements close` closes an ended month once and prints the
// same JSON when asked again; a malformed or unfinished month is refused. `ledger backfill`
// on a database without history prints that it is done.
func TestStatementsCloseCommand(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		err := dispatch(ctx, append(args, "--database-url", url), &out)
		return out.String(), err
	}
	if out, err := run("ledger", "backfill", "--batch", "10"); err != nil || !strings.Contains(out, `"done": true`) {
		t.Fatalf("backfill: %s %v", out, err)
	}
	if _, err := run("statements", "close", "--month", "2026-13"); err == nil || !strings.Contains(err.Error(), "--month") {
		t.Errorf("bad month: %v, want an error naming --month", err)
	}
	if _, err := run("statements", "close", "--month", time.Now().UTC().Format("2006-01")); err == nil || !strings.Contains(err.Error(), "not ended") {
		t.Errorf("this month: %v, want refused", err)
	}
	first, err := run("statements", "close", "--month", "2026-01")
	if err != nil || !strings.Contains(first, `"month": "2026-01"`) || !strings.Contains(first, `"events": 0`) {
		t.Fatalf("close: %s %v", first, err)
	}
	if again, err := run("statements", "close", "--month", "2026-01"); err != nil || again != first {
		t.Fatalf("close again: %s %v; want %s", again, err, first)
	}
}
