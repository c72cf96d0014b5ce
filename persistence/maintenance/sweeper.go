package maintenance

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runSweeper periodically releases stale sessions, pauses campaigns with broken links,
// keeps partitions of sessions ahead of the id sequence, purges old delivered postbacks,
// completes full campaigns and archives long-finished ones, from when after closes (nil: at
// once). Every process ticks it and the processes take turns (sweepTurn); each step is
// idempotent, so a sweep cut short is finished by the next.
func (f *Fleet) runSweeper(ctx context.Context, after <-chan struct{}) {
	if after != nil {
		select {
		case <-after:
		case <-ctx.Done():
			return
		}
	}
	f.every(ctx, f.cfg.SweepEvery, "sweeper", f.sweepTurn)
}

// sweepTurn sweeps when this process wins the fleet's turn: no process's sweep began in the
// last nine tenths of a period (persistence.DB.ClaimSweep), so that the processes sharing the
// database sweep about once a period between them, and one alone on each of its ticks.
func (f *Fleet) sweepTurn(ctx context.Context) error {
	turn, ok, err := f.db.ClaimSweep(ctx, f.cfg.SweepEvery*9/10)
	if err != nil || !ok {
		return err
	}
	return f.sweep(ctx, turn-1)
}

// Sweep runs the sweeper's steps once, now, whatever the fleet's turns (an operator's or a
// test's sweep; the broken-link slice follows this process's own count). A step that fails
// does not stop the others; the error names every step that failed.
func (f *Fleet) Sweep(ctx context.Context) error { return f.sweep(ctx, f.sweeps.Add(1)-1) }

// sweep is Sweep as the turn-th sweep (from 0), whose broken-link slice is turn's.
func (f *Fleet) sweep(ctx context.Context, turn int64) error {
	start := time.Now()
	var release time.Duration
	defer func() { f.stats.add(time.Since(start), release) }()
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	note(f.retireSessionIndexes(ctx))
	released, took, err := f.releaseStaleSessions(ctx)
	release = took
	note(err)
	if f.cfg.BrokenLinkEntries > 0 {
		note(f.pauseBrokenLinks(ctx, released, turn))
	}
	note(f.completeFullCampaigns(ctx))
	note(f.ensureSessionPartitions(ctx))
	if f.cfg.OutboxRetention > 0 {
		note(f.purgeDeliveredOutbox(ctx))
	}
	note(f.archiveStaleCampaigns(ctx))
	return errors.Join(errs...)
}

// retireSessionIndexes drops the indexes of sessions that no serving release reads.
func (f *Fleet) retireSessionIndexes(ctx context.Context) error {
	dropped, err := f.db.RetireSessionIndexes(ctx)
	if err != nil {
		return fmt.Errorf("retiring indexes of sessions: %w", err)
	}
	if dropped {
		f.log.Info("retired the indexes of sessions no serving release reads")
	}
	return nil
}

// releaseStaleSessions releases the stale sessions in batches, tells Deps.Released of each
// campaign whose counts that moved, and returns those campaigns and the time it took.
func (f *Fleet) releaseStaleSessions(ctx context.Context) (map[int64]struct{}, time.Duration, error) {
	released := map[int64]struct{}{}
	start := time.Now()
	for {
		ids, more, err := f.db.ReleaseStaleSessions(ctx, 5000)
		if err != nil {
			return released, time.Since(start), fmt.Errorf("releasing stale sessions: %w", err)
		}
		for _, id := range ids {
			f.released(id)
			released[id] = struct{}{}
		}
		if !more {
			return released, time.Since(start), nil
		}
	}
}
