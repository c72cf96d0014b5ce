package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"time"

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

// runHeartbeat writes this process's heartbeat now and every heartbeatEvery until ctx ends,
// then closes beatDone; Shutdown deletes the row after that.
func (a *App) runHeartbeat(ctx context.Context) {
	defer close(a.beatDone)
	beats := retry.NewOutage(a.log.Named("heartbeat"), "process heartbeat", retry.Default, nil)
	beat := func(ctx context.Context) error { return a.DB.Maintenance.BeatProcess(ctx, a.heartbeat()) }
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

// endHeartbeat deletes this process's row once its loop has stopped: a clean shutdown leaves
// no stale row behind.
func (a *App) endHeartbeat(ctx context.Context) error {
	select {
	case <-a.beatDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return a.DB.Maintenance.EndProcess(ctx, a.processID)
}
