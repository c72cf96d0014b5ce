package app

import (
	"context"
	"runtime"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
)

// A process that starts while others serve the same database is joining a fleet: its
// start-up (the engine, the panel in several streams, the entry history) would take every
// core of the machine and of the database for seconds, and the serving processes' entries
// would wait behind it. A joining process loads gently instead until every load is in: one
// participant stream, one core of Go, and its loads and its engine's first build paced to
// work a share of the time (Config.JoinLoadShare); it is ready later, the fleet keeps its
// latency. A process that starts alone loads with everything it has.

// DefaultJoinLoadShare is the share of wall-clock time a joining process's loads may work,
// together (persistence.DB.SetLoadDuty), unless Config.JoinLoadShare says otherwise. Unpaced,
// one stream and one core still took most of a two-core machine's time (about 0.9 core of
// Go and 0.7 of PostgreSQL); at a quarter, the serving process's entries at 1,000/s had a
// p99 of 36–62 ms over the start at 100k campaigns (10–15 ms alone), at a tenth 22–44 ms
// (docs/performance.md, "A joining process's share of the clock").
const DefaultJoinLoadShare = 0.1

// servingFresh is how recent a heartbeat must be for its process to count as serving:
// three heartbeats.
const servingFresh = 3 * heartbeatEvery

// serving counts the processes that serve the database now: a heartbeat within
// servingFresh, with an engine loaded.
func serving(ps []persistence.ServeProcess, now time.Time) int {
	n := 0
	for _, p := range ps {
		if !p.SnapshotAt.IsZero() && now.Sub(p.UpdatedAt) < servingFresh {
			n++
		}
	}
	return n
}

// joinGently sets this process's loads to their gentle form when others serve the database,
// and returns what ends it (nil when alone): call it once every load is in (afterLoads). A
// failed read of the heartbeats counts as alone: the start-up is then only faster.
func (a *App) joinGently(ctx context.Context) (end func()) {
	ps, now, err := a.DB.Maintenance.ServeProcesses(ctx)
	if err != nil {
		a.log.Warn("could not read the serve processes; loading at full speed", zap.Error(err))
		return nil
	}
	n := serving(ps, now)
	if n == 0 {
		return nil
	}
	a.log.Info("joining serving processes: loading with one stream and one core, paced", zap.Int("serving", n),
		zap.Float64("duty", a.cfg.JoinLoadShare))
	a.DB.Participants.SetLoadStreams(1)
	a.DB.Participants.SetLoadDuty(a.cfg.JoinLoadShare)
	// The engine's first build is paced with the loads: unpaced, at 100k campaigns it took a
	// core for a second and more, and the serving processes' PostgreSQL backends waited
	// tens of milliseconds at a time for the CPU (docs/performance.md, "The join's stall").
	a.Engine.SetBuildYield(a.DB.Participants.LoadYield())
	restore := throttleProcs()
	return func() {
		a.Engine.SetBuildYield(nil)
		a.DB.Participants.SetLoadStreams(0)
		a.DB.Participants.SetLoadDuty(0)
		restore()
		a.log.Info("joined: loads in, every core in use again")
	}
}

// afterLoads calls f once the engine, the panel and the counters are loaded, or when ctx
// ends first.
func (a *App) afterLoads(ctx context.Context, f func()) {
	defer f()
	for _, l := range a.loads() {
		select {
		case <-l.loaded:
		case <-ctx.Done():
			return
		}
	}
}

// procs holds GOMAXPROCS at 1 while any joining start-up of this process loads (two apps
// of one test binary can overlap), and restores it when the last one is in.
var procs struct {
	sync.Mutex
	holders, saved int
}

// throttleProcs sets GOMAXPROCS to 1 until the returned func is called (once).
func throttleProcs() (restore func()) {
	procs.Lock()
	if procs.holders == 0 {
		procs.saved = runtime.GOMAXPROCS(1)
	}
	procs.holders++
	procs.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.Lock()
			defer procs.Unlock()
			if procs.holders--; procs.holders == 0 {
				runtime.GOMAXPROCS(procs.saved)
			}
		})
	}
}
