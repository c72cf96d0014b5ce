package router

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestCountsFlushOutageLogsTwice cuts the database away from a notifier flushing every
// 20 ms, with completes arriving all along, for 10 s: the flush backs off and logs the outage
// twice (failing, then recovered with the count of failures), not once per flush (it logged
// 1,045 lines in 20 s before).
func TestCountsFlushOutageLogsTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s outage")
	}
	t.Parallel()
	link, dbURL := pgtest.NewLink(t, pgtest.URL(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := persistence.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	core, logs := observer.New(zap.InfoLevel)
	n := newNotifier(db.Feed, db.Maintenance, "outage-test", 20*time.Millisecond, zap.New(core))
	ran := make(chan struct{})
	go func() { defer close(ran); n.run(ctx) }()
	feed := time.NewTicker(5 * time.Millisecond)
	defer feed.Stop()
	step := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); <-feed.C {
			n.completed(1)
			n.counts(1)
			n.entry(1, 1, time.Now().Unix())
		}
	}

	step(300 * time.Millisecond)
	if logs.Len() != 0 {
		t.Fatalf("healthy flushes logged: %v", logs.All())
	}
	link.Cut()
	step(10 * time.Second)
	link.Restore()
	deadline := time.Now().Add(15 * time.Second)
	for logs.FilterMessage("background task recovered").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery logged after the outage; %d lines, the first: %v", logs.Len(), logs.All()[:min(3, logs.Len())])
		}
		step(50 * time.Millisecond)
	}
	step(300 * time.Millisecond)
	cancel()
	<-ran

	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d log lines for one outage, want 2 (failing, recovered); the first: %v", len(all), all[:min(3, len(all))])
	}
	if all[0].Message != "background task failing; retrying with backoff" {
		t.Errorf("first line %q, want the failing line", all[0].Message)
	}
	f := all[1].ContextMap()["failures"].(int64)
	// 10 s of 20 ms flushes is 500; a backoff capped at 5 s makes about 8 attempts.
	if f < 3 || f > 20 {
		t.Errorf("recovered after %d failed flushes, want a backed-off handful", f)
	}
	t.Logf("outage: %d failed flushes, logged as %v", f, all)
}
