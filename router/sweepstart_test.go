package router_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/router"
)

// TestSweeperStartsWhenLoadsAreIn: a router's sweeper does not sweep before the channel
// Start was given closes (the process's loads in), and sweeps on its period once it has:
// stale sessions stay held, then are released.
func TestSweeperStartsWhenLoadsAreIn(t *testing.T) {
	w := newWorld(t, "")
	// The serving app never sweeps during the test: only the router under test does.
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

// TestSweepersTakeTurns: two processes' sweepers on one database sweep in turns: over a
// stretch of time the fleet's sweeps are about as many as one process's ticks, not twice
// that, and it does sweep.
func TestSweepersTakeTurns(t *testing.T) {
	w := newWorld(t, "")
	every := 100 * time.Millisecond
	began := time.Now()
	for range 2 {
		startSweeper(t, w, every, nil)
	}
	time.Sleep(20 * every)
	turns := w.count(`SELECT turn FROM sweeper_turns WHERE name = 'sweep'`)
	// Claims are at least nine tenths of a period apart: at most this many in the time gone.
	most := int64(time.Since(began)/(every*9/10)) + 1
	if turns < 3 || turns > most {
		t.Errorf("%d sweeps by two processes in %v of 100 ms periods, want 3 to %d", turns, time.Since(began).Round(time.Millisecond), most)
	}
}

// startSweeper starts a router on w's database whose background work (its sweeper every
// every, from when after closes) runs until t ends; it serves no requests.
func startSweeper(t *testing.T, w *world, every time.Duration, after <-chan struct{}) {
	t.Helper()
	cfg := router.Config{SweepEvery: every, BrokenLinkEntries: -1}
	r, err := router.New(router.Deps{DB: w.db, Engine: engine.New(nil), Panel: engine.NewPanel(), Key: w.key, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background(), after)
	t.Cleanup(r.Close)
}
