package persistence

import (
	"context"
	"sync"
	"time"
)

// A process that starts beside others serving the same database (joining) must not take the
// machine's and the database's cores from their requests while it loads. Its bulk loads (the
// panel, the engine's campaigns, the entry history) are therefore paced: together they may
// work a set share of wall-clock time, and sleep the rest. Work is measured as the wall time
// a load spends reading and decoding rows, which covers both PostgreSQL's side (a stream
// that is not read stops: the server blocks on its socket) and ours.

// loadPacer is a token bucket of work time shared by every load of one DB: tokens accrue at
// duty seconds per second, up to paceBurst, and a load that has worked spends them, then
// sleeps while the bucket is below zero.
type loadPacer struct {
	mu    sync.Mutex
	duty  float64 // share of wall time the loads may work; 0: unpaced
	avail time.Duration
	last  time.Time
}

// paceBurst is the most work a paced load does without sleeping: short enough that the
// serving processes' requests wait behind it no longer than a few milliseconds.
const paceBurst = 2 * time.Millisecond

// paceRows is how many rows a paced load reads between two looks at the clock.
const paceRows = 64

// SetLoadDuty paces this DB's bulk loads to work at most duty of wall-clock time between
// them (0 < duty < 1), or lifts the pacing (duty 0 or ≥ 1). A process joining others sets
// it until its loads are in.
func (db *ParticipantStore) SetLoadDuty(duty float64) {
	p := &db.pace
	p.mu.Lock()
	defer p.mu.Unlock()
	if duty <= 0 || duty >= 1 {
		duty = 0
	}
	p.duty, p.avail, p.last = duty, paceBurst, time.Now()
}

// spend takes worked from the bucket at now and returns how long the load must sleep.
func (p *loadPacer) spend(worked time.Duration, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.duty == 0 {
		return 0
	}
	p.avail = min(p.avail+time.Duration(float64(now.Sub(p.last))*p.duty), paceBurst) - worked
	p.last = now
	if p.avail >= 0 {
		return 0
	}
	return time.Duration(float64(-p.avail) / p.duty)
}

// loadMeter paces one stream of rows: call row for each row read.
type loadMeter struct {
	p     *loadPacer
	rows  int
	start time.Time
}

func (db *ParticipantStore) meter() loadMeter { return loadMeter{p: &db.pace, start: time.Now()} }

// row accounts for one row read; every paceRows rows it hands the work done since its last
// look to the pacer and sleeps as long as the pacer says (less when ctx ends).
func (m *loadMeter) row(ctx context.Context) {
	if m.rows++; m.rows < paceRows {
		return
	}
	m.rows = 0
	m.look(ctx)
}

// look hands the work done since the last look to the pacer and sleeps as long as it says
// (less when ctx ends).
func (m *loadMeter) look(ctx context.Context) {
	now := time.Now()
	worked := now.Sub(m.start)
	if worked < paceBurst/4 {
		return
	}
	m.start = now
	d := m.p.spend(worked, now)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	m.start = time.Now()
}

// yieldGap is the longest time between two calls of a LoadYield pause that counts as work:
// a longer one is the start of another piece of work, not work.
const yieldGap = time.Second

// LoadYield returns a pause for start-up work of this process that reads no rows but
// belongs with its loads (the engine's first build): its first call marks the start of the
// work; each later one hands the time since the one before (up to yieldGap) to the loads'
// pacer (SetLoadDuty) and sleeps as long as it says, so the build shares the loads' budget.
// Unpaced, a call reads the clock and returns. Safe for concurrent use.
func (db *ParticipantStore) LoadYield() func() {
	var mu sync.Mutex
	m := loadMeter{p: &db.pace}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if m.start.IsZero() || time.Since(m.start) > yieldGap {
			m.start = time.Now()
			return
		}
		m.look(context.Background())
	}
}
