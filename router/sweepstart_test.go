package router_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence/maintenance"
)

// TestSweeperStartsWhenLoadsAreIn: a process's sweeper does not sweep before the channel
// Start was given closes (the process's loads in), and sweeps on its period once it has:
// stale sessions stay held, then are released.
func TestSweeperStartsWhenLoadsAreIn(t *testing.T) {
	w := newWorld(t, "")
	// The serving app never sweeps during the test: only the sweeper under test does.
	s := w.startSweepingEvery(time.Hour)
	base := s.URL
	camp, _ := w.campaign(base, campaignOpts{quota: 100})
	ps := w.participants(3)
	w.settle()
	w.survey.outcome = func(string) string { return "" } // no callback
	for _, p := range ps {
		w.get(w.client, strings.Replace(w.entryURL(base, p, camp), base, w.publicURL, 1))
	}
	w.age(camp, "31 minutes")
	held := func() int64 {
		return w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND released_at IS NULL`, camp)
	}
	if n := held(); n != 3 {
		t.Fatalf("%d sessions held before the sweep, want 3", n)
	}
	every := 20 * time.Millisecond
	loaded := make(chan struct{})
	startSweeper(t, w, every, loaded)
	time.Sleep(15 * every)
	if n := held(); n != 3 {
		t.Fatalf("%d sessions held before the loads were in, want 3: the sweeper swept", n)
	}
	close(loaded)
	waitFor(t, "the sweeper to release the stale sessions", 10*time.Second, func() bool { return held() == 0 })
}

// startSweeper starts a process's maintenance on w's database whose sweeper ticks every
// every, from when after closes, until t ends; it serves no requests.
func startSweeper(t *testing.T, w *world, every time.Duration, after <-chan struct{}) {
	t.Helper()
	cfg := maintenance.Config{SweepEvery: every, BrokenLinkEntries: -1}
	f, err := maintenance.New(maintenance.Deps{Store: w.db.Maintenance, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(context.Background(), after)
	t.Cleanup(f.Close)
}
