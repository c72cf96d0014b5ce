package bench

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// JoinRate is the most entries/s the joining phases offer: they must last through a second
// process's start, each URL used once.
const JoinRate = 1000

// joinURLWindow is how long the entry URLs set aside for the joining phase last at JoinRate:
// the phase runs until the second process is ready (a joining process loads gently: at
// 100,000 campaigns and a million participants 45–95 s at a quarter of the clock, 2m35s–3m42s
// at serve's default tenth), or until they run out, which the report says.
const joinURLWindow = 3 * time.Minute

// joinSpan is how long the joining phases run at most on the entry URLs set aside for them:
// the window alone, the start from a snapshot (three windows), and the start with a full
// load (Options.JoinFull).
func joinSpan(o Options) time.Duration {
	d := o.Warmup + o.Duration + 3*o.Duration
	if o.JoinFull {
		d += max(3*o.Duration, joinURLWindow)
	}
	return d
}

// joinWindowMax bounds the joining phase when the second process is slow to be ready.
const joinWindowMax = 10 * time.Minute

// joinPhases measures what a second serve process starting on the same database does to
// the first one's entries: entries at one open-loop rate for a window with the first alone,
// then from the second's start until it is ready, three windows at least, so that the figure
// covers the whole start, not its first seconds: first a second process that starts from the
// first's snapshot (serve --snapshot-peer, entries-joining), then, with Options.JoinFull, one
// that loads everything from PostgreSQL (entries-joining-full). Each second process is
// stopped afterwards; the time it took to be ready is reported.
func joinPhases(ctx context.Context, o Options, rep *Report, t *Target, srv *server, ep *Phase, entries *Entries, sessions *Sessions, phase func(Load, *Scenario)) {
	rate := min(JoinRate, roundRate(ep.Rate(ep.OpCount(OpEntryAdmitted))/2))
	if rate <= 0 {
		return
	}
	open := Load{Workers: o.OpenConnections, Rate: rate}
	phase(open, t.EntriesScenario(ScEntriesAlone, entries, sessions))
	if srv.adminAddr != "" {
		ready, cpu, ok := joinOnce(ctx, o, rep, t, srv, open, entries, sessions, phase, ScEntriesJoining,
			[]string{"--snapshot-peer", srv.adminAddr}, "server2.log")
		if !ok {
			return
		}
		rep.JoinReady, rep.JoinCPU = ready, cpu
		if strings.Contains(tail(filepath.Join(filepath.Dir(srv.logPath), "server2.log")), "snapshot refused") {
			rep.note("the second process refused the first's snapshot and loaded from the database: %s",
				tail(filepath.Join(filepath.Dir(srv.logPath), "server2.log")))
		}
	}
	if o.JoinFull {
		if entries.Left() == 0 {
			rep.note("no entry URL was left for the joining phase with a full load (%s)", ScEntriesJoiningFull)
			return
		}
		ready, cpu, ok := joinOnce(ctx, o, rep, t, srv, open, entries, sessions, phase, ScEntriesJoiningFull, nil, "server2-full.log")
		if ok {
			rep.JoinReadyFull, rep.JoinCPUFull = ready, cpu
		}
	}
}

// joinOnce starts a second serve process with more flags, runs entries (scenario name) at
// open from its start until it is ready, stops it, and returns how long it took to be ready
// and the CPU it spent until then.
func joinOnce(ctx context.Context, o Options, rep *Report, t *Target, srv *server, open Load, entries *Entries, sessions *Sessions,
	phase func(Load, *Scenario), name string, args []string, logName string) (time.Duration, time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, 0, false
	}
	addr, err := freeAddr()
	if err != nil {
		rep.note("no address for the second process: %v", err)
		return 0, 0, false
	}
	type started struct {
		s   *server
		cpu time.Duration // from its start until ready
		err error
	}
	ch := make(chan started, 1)
	second := o
	second.Profile = false
	second.serveArgs = append(slices.Clone(o.serveArgs), args...)
	profile := ""
	if o.Profile && o.ProfilePhase == name {
		profile, second.profileFromStart = filepath.Join(filepath.Dir(srv.logPath), "joiner-cpu.pprof"), true
	}
	var ready atomic.Bool
	go func() {
		s, err := startServer(ctx, second, addr, srv.dbURL, profile, filepath.Join(filepath.Dir(srv.logPath), logName))
		var cpu time.Duration
		if err == nil {
			cpu = TreeCPU(s.pid())
			if profile != "" {
				s.signal(syscall.SIGUSR2) // the profile covers its start only
			}
		}
		ready.Store(true)
		ch <- started{s, cpu, err}
	}()
	open.Duration, open.Warmup = joinWindowMax, 0
	phase(open, untilReady(t.EntriesScenario(name, entries, sessions), &ready, time.Now().Add(3*o.Duration)))
	select {
	case st := <-ch:
		if st.err != nil {
			rep.note("the second process did not start: %v", st.err)
			return 0, 0, false
		}
		st.s.stop()
		if profile != "" {
			dst := filepath.Join(o.Out, "bench", "server-cpu.pprof")
			if err := copyFile(profile, dst); err == nil {
				rep.Profile, rep.ProfilePhase = dst, name
			} else {
				rep.note("the second process's CPU profile was not kept: %v", err)
			}
		}
		return st.s.loaded, st.cpu, true
	case <-time.After(10 * time.Minute):
		rep.note("the second process was not ready within 10 minutes")
		return 0, 0, false
	}
}

// untilReady is s ending (Exhausted) once ready is set and not before notBefore.
func untilReady(s *Scenario, ready *atomic.Bool, notBefore time.Time) *Scenario {
	next := s.Prepare
	c := *s
	c.Prepare = func(w *Worker) int {
		if ready.Load() && !time.Now().Before(notBefore) {
			return Exhausted
		}
		return next(w)
	}
	return &c
}
