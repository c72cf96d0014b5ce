package bench

import (
	"time"

	"github.com/valyala/fasthttp"
)

// Phase is one measured load phase with the process figures around it.
type Phase struct {
	*Result
	Target      string        // "switchboard" or "floor"
	ServerCPU   time.Duration // CPU of the server process during the phase (warm-up included)
	PostgresCPU time.Duration // CPU of the postmaster and its live backends (lower bound)
	BenchCPU    time.Duration // CPU of this load generator
	Elapsed     time.Duration // wall time of the phase, warm-up included
	// ServerWaiting is the time the server process's threads spent runnable with no core
	// free during the phase (RunQueueWait; warm-up included, 0 when unknown).
	ServerWaiting time.Duration
	RSS, HWM      int64 // server memory after the phase
	// Verdicts are the server's entry decisions during the phase (warm-up included), from
	// switchboard_entries_total on /metrics: "admitted", "refused by engine (not_eligible)",
	// "refused by database (quota)" and so on; nil when /metrics could not be read.
	Verdicts map[string]float64
	// CacheHits and CacheMisses are the server's GET /campaigns answers during the phase
	// (warm-up included) served from its answer cache and computed, from /metrics.
	CacheHits, CacheMisses float64
	// Repeats are the phase's requests (warm-up included) that repeated one it had sent
	// before, when its scenario counts them.
	Repeats uint64
	// Slowest is the second of an open-loop phase against serve with the most requests
	// over SlowLatency, placed in the run (nil: none was slow, or not such a phase).
	Slowest *SlowSecond
}

// SlowSecond is one second of a phase placed on the serve process's clock, with the CPU the
// serve process and PostgreSQL spent in it: what a stall can be set against.
type SlowSecond struct {
	Seconds        float64 // since the serve process started
	Requests, Slow uint64  // Slow: over SlowLatency
	MaxMS          float64
	// ServeCores and PostgresCores are their CPU in that second, in cores (0: unknown).
	ServeCores, PostgresCores float64 `json:",omitempty"`
	// ServeWaiting and PhaseWaiting are the time the serve process's threads waited for a
	// core (runnable, no core free: the load generator and PostgreSQL hold both) in that
	// second and over the phase, in milliseconds per second summed over its threads (0:
	// unknown).
	ServeWaiting, PhaseWaiting float64 `json:",omitempty"`
}

// placeSlowest fills Slowest of the open-loop phases against serve from its trace: the
// samples and the time it started.
func placeSlowest(phases []*Phase, samples []MemorySample, started time.Time) {
	for _, p := range phases {
		i := p.Result.Slowest()
		if p.Target != "switchboard" || p.Mode != "open" || i < 0 {
			continue
		}
		sec := p.Seconds[i]
		at := p.Start.Add(time.Duration(i) * time.Second).Sub(started)
		ss := &SlowSecond{Seconds: at.Seconds(), Requests: sec.Requests, Slow: sec.Slow, MaxMS: ms(int64(sec.Max))}
		if serve, pg, ok := cpuBetween(samples, at, at+time.Second); ok {
			ss.ServeCores, ss.PostgresCores = serve, pg
		}
		if w, ok := waitingBetween(samples, at, at+time.Second); ok {
			ss.ServeWaiting = w
		}
		from := p.Start.Sub(started)
		if w, ok := waitingBetween(samples, from, from+p.Span); ok {
			ss.PhaseWaiting = w
		}
		p.Slowest = ss
	}
}

// WaitingPerSecond is ServerWaiting in milliseconds per second of the phase (0: unknown).
func (p *Phase) WaitingPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.ServerWaiting.Microseconds()) / 1e3 / p.Elapsed.Seconds()
}

// CacheHitShare is the share of the phase's offers answers served from the server's answer
// cache (-1: no offers answered, or /metrics not read).
func (p *Phase) CacheHitShare() float64 {
	if all := p.CacheHits + p.CacheMisses; all > 0 {
		return p.CacheHits / all
	}
	return -1
}

// Rate is n requests over the phase's measured span, as Throughput: the window, or less
// when the scenario ran out of URLs or sessions, or more when an open loop fell behind.
func (p *Phase) Rate(n uint64) float64 {
	d := p.Span
	if d <= 0 {
		d = p.Window
	}
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// AdmittedShare is the share of the phase's entry answers that admitted (-1: no entries).
func (p *Phase) AdmittedShare() float64 {
	adm := p.OpCount(OpEntryAdmitted)
	all := adm + p.OpCount(OpEntryRefused) + p.OpCount(OpEntryBlocked)
	if all == 0 {
		return -1
	}
	return float64(adm) / float64(all)
}

// CPUPer1k is the server's CPU seconds per 1,000 requests.
func (p *Phase) CPUPer1k() float64 {
	// The requests counted are those of the window, the CPU is the warm-up's too: scale them
	// to the time the CPU was read over. A phase whose scenario ran out (or whose second
	// process became ready) counted its requests over its span, not its whole window.
	window := p.Window
	if p.Span > 0 && p.Span < window {
		window = p.Span
	}
	n := float64(p.Requests) * float64(p.Elapsed) / float64(max(window, 1))
	if n <= 0 {
		return 0
	}
	return p.ServerCPU.Seconds() / n * 1000
}

// OpCount is the number of requests of operation name in the phase.
func (p *Phase) OpCount(name string) uint64 {
	for _, o := range p.Ops {
		if o.Name == name {
			return o.Requests
		}
	}
	return 0
}

// Scenario names.
const (
	ScOffers    = "offers"
	ScEntries   = "entries"
	ScMix       = "mix"
	ScCallbacks = "callbacks"
	ScFloor     = "floor"
	// ScOffersDistinct asks for each participant at most once in the phase: no answer
	// comes from the answer cache.
	ScOffersDistinct = "offers-distinct"
	// ScEntriesAlone and ScEntriesJoining are entries at one open-loop rate, before and
	// while a second serve process starts on the same database.
	ScEntriesAlone   = "entries-alone"
	ScEntriesJoining = "entries-joining"
	// ScEntriesJoiningFull is entries while a second process starts with a full load from
	// the database, no snapshot (what a process does when none is available).
	ScEntriesJoiningFull = "entries-joining-full"
)

// measure drives scenario s with load l against process pid and reads the process figures
// around it: CPU and memory of pid, CPU of PostgreSQL (pgPID and its backends) and of this
// process, and the entry verdicts the server at addr counted (client nil: pid is not a
// serve process, neither PostgreSQL nor verdicts are read).
func measure(client *fasthttp.HostClient, addr string, pid, pgPID int, l Load, s *Scenario) *Phase {
	var before0 serverCounts
	if client != nil {
		before0 = scrapeCounts(client, addr)
	}
	before, pgBefore, selfBefore, t0 := ReadProc(pid), TreeCPU(pgPID), SelfCPU(), time.Now()
	waitBefore, waitOK := RunQueueWait(pid)
	r := Drive(l, s)
	after := ReadProc(pid)
	p := &Phase{Result: r, ServerCPU: after.CPU - before.CPU, BenchCPU: SelfCPU() - selfBefore,
		Elapsed: time.Since(t0), RSS: after.RSS, HWM: after.HWM}
	if waitAfter, ok := RunQueueWait(pid); ok && waitOK {
		p.ServerWaiting = max(0, waitAfter-waitBefore)
	}
	if s.Repeats != nil {
		p.Repeats = s.Repeats()
	}
	if client == nil {
		return p
	}
	p.PostgresCPU = max(0, TreeCPU(pgPID)-pgBefore)
	if after := scrapeCounts(client, addr); after.verdicts != nil && before0.verdicts != nil {
		p.Verdicts = map[string]float64{}
		for k, v := range after.verdicts {
			if d := v - before0.verdicts[k]; d > 0 {
				p.Verdicts[k] = d
			}
		}
		p.CacheHits, p.CacheMisses = after.cacheHits-before0.cacheHits, after.cacheMisses-before0.cacheMisses
	}
	return p
}
