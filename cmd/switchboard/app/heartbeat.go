package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// heartbeatEvery is the period of a serve process's heartbeat row (serve_processes), by which
// the console's operator view lists every process's engine; the view calls a row stale after
// a minute without one.
const heartbeatEvery = 10 * time.Second

// newProcessID names this process among every serve process: host, pid and a random part
// (two apps of one test binary share host and pid).
func newProcessID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// buildVersion is the binary's module version and VCS revision as Go stamped them: the
// heartbeat's version when Config.Version is empty.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	if v == "" {
		return "unknown"
	}
	return v
}

// heartbeat is this process's row as of now.
func (a *App) heartbeat() persistence.ServeProcess {
	p := persistence.ServeProcess{ID: a.processID, Addr: a.cfg.Addr, Version: a.version, StartedAt: a.started,
		Campaigns: a.Engine.Snapshot().Len()}
	if n := a.sync.current.Load(); n != 0 {
		p.SnapshotAt = time.Unix(0, n)
	}
	if a.Panel != nil {
		p.Participants = a.Panel.Len()
	}
	return p
}

// beacon keeps this process's row in serve_processes: it writes the row now and every
// heartbeatEvery until its context ends, then, at shutdown, deletes it, so that a clean
// stop leaves no stale row behind.
type beacon struct {
	store beaconStore
	id    string
	row   func() persistence.ServeProcess // the row as of now
	done  chan struct{}                   // closed when the loop has stopped
	log   *zap.Logger
}

// beaconStore is the part of the process registry a beacon writes.
type beaconStore interface {
	BeatProcess(ctx context.Context, p persistence.ServeProcess) error
	EndProcess(ctx context.Context, id string) error
}

func newBeacon(store beaconStore, id string, row func() persistence.ServeProcess, log *zap.Logger) *beacon {
	return &beacon{store: store, id: id, row: row, done: make(chan struct{}), log: log}
}

// run writes the row now and every heartbeatEvery until ctx ends, then closes done.
func (b *beacon) run(ctx context.Context) {
	defer close(b.done)
	beats := retry.NewOutage(b.log, "process heartbeat", retry.Default, nil)
	beat := func(ctx context.Context) error { return b.store.BeatProcess(ctx, b.row()) }
	beats.Attempt(ctx, beat)
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			beats.Attempt(ctx, beat)
		}
	}
}

// end deletes the row once the loop has stopped.
func (b *beacon) end(ctx context.Context) error {
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.store.EndProcess(ctx, b.id)
}
