package persistence

import (
	"context"
	"testing"
	"time"
)

// TestLoadPacerSpend: unpaced, nothing sleeps; paced, work beyond the burst and the tokens
// accrued since is slept off at 1/duty, and a long pause accrues no more than the burst.
func TestLoadPacerSpend(t *testing.T) {
	db := NewDB(nil, nil)
	t0 := time.Now()
	if d := db.pace.spend(time.Second, t0); d != 0 {
		t.Fatalf("unpaced: sleep %v", d)
	}
	db.Participants.SetLoadDuty(0.25)
	p := &db.pace
	p.last = t0
	for _, c := range []struct {
		at, worked, sleep time.Duration
	}{
		{0, time.Millisecond, 0},                                  // within the burst: 1 ms left
		{0, 5 * time.Millisecond, 16 * time.Millisecond},          // 4 ms short: 16 ms at a quarter
		{16 * time.Millisecond, 0, 0},                             // slept: back to zero
		{time.Hour, 10 * time.Millisecond, 32 * time.Millisecond}, // an hour accrues the burst only
	} {
		if d := p.spend(c.worked, t0.Add(c.at)); d != c.sleep {
			t.Fatalf("at %v worked %v: sleep %v, want %v", c.at, c.worked, d, c.sleep)
		}
	}
	db.Participants.SetLoadDuty(1)
	if d := p.spend(time.Second, t0.Add(2*time.Hour)); d != 0 {
		t.Fatalf("lifted: sleep %v", d)
	}
}

// TestLoadMeterPaces: a stream of rows that works all the time takes about 1/duty of its
// working time when paced, and no longer than that; ctx's end cuts a sleep short. The work is
// timed inside the same run as the whole (not against a separate unpaced run), so that a
// machine whose other processes take the cores for a while skews both alike.
func TestLoadMeterPaces(t *testing.T) {
	busy := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	// run returns the stream's whole time and the part of it spent working (not in row).
	run := func(db *DB, ctx context.Context) (total, worked time.Duration) {
		m := db.Participants.meter()
		start := time.Now()
		for range 2000 { // 2000 rows of 25 µs: 50 ms of work
			w := time.Now()
			busy(25 * time.Microsecond)
			worked += time.Since(w)
			m.row(ctx)
		}
		return time.Since(start), worked
	}
	db := NewDB(nil, nil)
	plain, _ := run(db, context.Background())
	db.Participants.SetLoadDuty(0.5)
	paced, worked := run(db, context.Background())
	if r := float64(paced) / float64(worked); r < 1.4 || r > 4 {
		t.Fatalf("paced at 0.5: %v in all for %v of work (%.2f×), want about 2×", paced, worked, r)
	}
	db.Participants.SetLoadDuty(0.01)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, _ := run(db, ctx); d > 20*plain {
		t.Fatalf("paced with its context ended: %v against %v unpaced", d, plain)
	}
}

// TestLoadYield: a pause after work sleeps it off at the loads' duty; unpaced it returns at
// once; the first call, and one after a gap longer than yieldGap, only mark a start.
func TestLoadYield(t *testing.T) {
	busy := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	db := NewDB(nil, nil)
	y := db.Participants.LoadYield()
	busy(10 * time.Millisecond)
	if d := timed(y); d > 5*time.Millisecond {
		t.Fatalf("unpaced: the pause took %v", d)
	}
	db.Participants.SetLoadDuty(0.25)
	y = db.Participants.LoadYield()
	busy(10 * time.Millisecond) // before the work starts: not counted
	if d := timed(y); d > 5*time.Millisecond {
		t.Fatalf("paced: the first call took %v, want none", d)
	}
	busy(10 * time.Millisecond)
	// 10 ms of work less the 2-ms burst, at a quarter: about 32 ms of sleep.
	if d := timed(y); d < 20*time.Millisecond || d > time.Second {
		t.Fatalf("paced at 0.25 after 10 ms of work: the pause took %v, want about 32 ms", d)
	}
	time.Sleep(yieldGap + 100*time.Millisecond)
	if d := timed(y); d > 5*time.Millisecond {
		t.Fatalf("after a gap of %v: the pause took %v, want none", yieldGap, d)
	}
}
