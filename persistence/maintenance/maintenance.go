// Package maintenance keeps the fleet's database in shape: the sweeper (stale sessions
// released, broken links paused, full campaigns completed, partitions of sessions created
// ahead of the id sequence, delivered postbacks purged, finished campaigns archived) and the
// planner statistics of the routing tables. Every process runs it; the processes sharing a
// database take turns (persistence.DB.ClaimSweep), and every step is idempotent.
package maintenance

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// Config tunes the fleet's maintenance; zero values take the defaults.
type Config struct {
	// BrokenLinkEntries: this many entries in a row with no callback within 2 × LOI + 10
	// minutes pause a campaign (7 System Paused). Default 50; negative: off.
	BrokenLinkEntries int
	// BrokenLinkSlices: each sweep looks for broken links in the campaigns whose entries it
	// released and in one of this many slices of every active campaign, so that each is
	// looked at once in this many sweeps (a release whose process died before looking) with
	// no sweep looking at them all. Default 120 (an hour at the default SweepEvery; a
	// twentieth of 100,000 campaigns probed 5,000 campaigns' entries, about 50 ms of
	// PostgreSQL beside the 20 ms scan of campaigns that picks the slice); negative: only the
	// campaigns whose entries the sweep released.
	BrokenLinkSlices int
	// SweepEvery is the period of the sweeper: stale sessions, broken links, full campaigns,
	// archiving (default 30 s). It is the fleet's: processes sharing the database take turns.
	SweepEvery time.Duration
	// AnalyzeEvery is how often the process looks for routing tables that have about
	// doubled since their last ANALYZE (default 1 s): a young marketplace's tables (and
	// each new partition of sessions) double within seconds under load, and the plans made
	// when they were empty, kept until an analyze, read them whole.
	AnalyzeEvery time.Duration
	// ArchiveAfter: the sweeper moves a campaign that has been 3 Complete or 6 Reconciled
	// this long to 4 Archived (docs/rules.md §4; default 90 days).
	ArchiveAfter time.Duration
	// Partitions sizes the partitions of sessions the sweeper keeps ahead of the id sequence
	// (persistence.PartitionPolicy; zero: its defaults). It checks them every
	// PartitionEvery (default 10 minutes).
	Partitions     persistence.PartitionPolicy
	PartitionEvery time.Duration
	// OutboxRetention: the sweeper deletes postbacks and webhooks delivered longer ago than
	// this (default 90 days; negative: never). Undelivered and dead ones stay.
	OutboxRetention time.Duration
}

func (c Config) withDefaults() Config {
	if c.BrokenLinkEntries == 0 {
		c.BrokenLinkEntries = 50
	}
	if c.BrokenLinkSlices == 0 {
		c.BrokenLinkSlices = 120
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = 30 * time.Second
	}
	if c.AnalyzeEvery <= 0 {
		c.AnalyzeEvery = time.Second
	}
	if c.ArchiveAfter <= 0 {
		c.ArchiveAfter = 90 * 24 * time.Hour
	}
	if c.PartitionEvery <= 0 {
		c.PartitionEvery = 10 * time.Minute
	}
	if c.OutboxRetention == 0 {
		c.OutboxRetention = 90 * 24 * time.Hour
	}
	return c
}

// store is what the maintenance jobs need of the database: statements of the fleet's
// upkeep (persistence's maintenance store).
type store interface {
	ClaimSweep(ctx context.Context, after time.Duration) (turn int64, ok bool, err error)
	RetireSessionIndexes(ctx context.Context) (bool, error)
	ReleaseStaleSessions(ctx context.Context, limit int) (moved []int64, more bool, err error)
	PauseBrokenLinks(ctx context.Context, n int, scope persistence.BrokenLinkScope) ([]int64, error)
	CompleteFullCampaigns(ctx context.Context, ids []int64) ([]int64, error)
	EnsureSessionPartitions(ctx context.Context, p persistence.PartitionPolicy) ([]string, error)
	PurgeDeliveredOutbox(ctx context.Context, keep time.Duration, batch int) (int64, error)
	ArchiveStaleCampaigns(ctx context.Context, after time.Duration) ([]int64, error)
	AnalyzeGrowingTables(ctx context.Context) ([]string, error)
}

// Deps is what the fleet's maintenance needs from the process.
type Deps struct {
	Store  store
	Log    *zap.Logger
	Config Config
	// Released is told each campaign whose stale sessions a sweep released: its counts
	// changed, and the other processes' counters hear of it (the router's notifier). Nil:
	// nobody is told.
	Released func(campaignID int64)
}

// Fleet runs this process's share of the fleet's maintenance: the sweeper and the planner
// statistics.
type Fleet struct {
	db       store
	log      *zap.Logger
	cfg      Config
	released func(campaignID int64)

	partitionsAt atomic.Int64 // the sweeper's last check of the partitions of sessions (Unix ns)
	sweeps       atomic.Int64 // Sweep calls begun: their broken-link slice (BrokenLinkSlices)
	stats        sweepStats   // what the sweeps cost, for /metrics (metrics.go)

	stop    context.CancelFunc
	done    sync.WaitGroup
	started bool
}

// New builds the fleet's maintenance; Start runs it.
func New(d Deps) (*Fleet, error) {
	if d.Store == nil {
		return nil, errors.New("maintenance: Store is required")
	}
	log := d.Log
	if log == nil {
		log = zap.NewNop()
	}
	released := d.Released
	if released == nil {
		released = func(int64) {}
	}
	return &Fleet{db: d.Store, log: log, cfg: d.Config.withDefaults(), released: released}, nil
}

// Start runs the sweeper and the planner statistics until Close. The sweeper's first
// period begins when sweepAfter closes (nil: at once): the process's own loads in, so that
// its first sweep (a broken-link slice and the full campaigns: about 0.6 s of PostgreSQL at
// 100,000 campaigns as first measured, 0.12 s since JIT is off and the slice a 120th) does
// not land on PostgreSQL beside its loads, where a joining process's would take the cores
// the fleet's entries wait on (docs/performance.md, "The whole join measured; a joining
// process's first sweep").
func (f *Fleet) Start(ctx context.Context, sweepAfter <-chan struct{}) {
	ctx, f.stop = context.WithCancel(ctx)
	f.started = true
	f.done.Add(2)
	go func() { defer f.done.Done(); f.runSweeper(ctx, sweepAfter) }()
	go func() { defer f.done.Done(); f.runAnalyzer(ctx) }()
}

// Close stops the jobs and waits for a sweep under way.
func (f *Fleet) Close() {
	if f.started {
		f.stop()
		f.done.Wait()
	}
}

// every runs job each period until ctx ends; a failing job is logged once (as what) until
// it succeeds again.
func (f *Fleet) every(ctx context.Context, period time.Duration, what string, job func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	outage := retry.NewOutage(f.log, what, retry.Default, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			outage.Attempt(ctx, job)
		}
	}
}
