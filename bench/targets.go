package bench

import (
	"fmt"
	"time"
)

// Targets checked by every run (docs/performance.md).
const (
	// TargetOffersVsFloor is GET /campaigns' closed-loop throughput against the floor's at
	// 10,000 campaigns; TargetOffersVsFloorLarge from 100,000 campaigns.
	TargetOffersVsFloor      = 0.60
	TargetOffersVsFloorLarge = 0.45
	// TargetP99VsFloor bounds GET /campaigns' closed-loop p99 against the floor's at the same
	// concurrency.
	TargetP99VsFloor = 3
	// TargetP99AtHalf bounds GET /campaigns' open-loop p99 at half its maximum throughput.
	TargetP99AtHalf = 5 * time.Millisecond
	// TargetEntriesPerSec and TargetCallbacksPerSec are durable admitted entries and
	// completes per second; TargetWriteP99 their p99 at those rates (open loop).
	TargetEntriesPerSec   = 5000
	TargetCallbacksPerSec = 3000
	TargetWriteP99        = 25 * time.Millisecond
	// TargetAdmittedShare is the least share of the entries phase's answers that admit.
	TargetAdmittedShare = 0.80
	// TargetRSS bounds the server's peak RSS at 100,000 campaigns and 1,000,000
	// participants; TargetRSSHuge at 10,000,000 participants.
	TargetRSS     = 1 << 30
	TargetRSSHuge = 5 << 29
	// TargetReady bounds the time from start to ready (engine, panel and counters loaded).
	TargetReady = 30 * time.Second
	// TargetJoinReady bounds the time to ready of a second process started from the first's
	// snapshot at 1,000,000 participants; TargetJoinReadyHuge at 10,000,000.
	TargetJoinReady     = 10 * time.Second
	TargetJoinReadyHuge = 30 * time.Second
	// TargetBalancedOffers is the least share of greedy's offers throughput the balanced
	// allocation keeps (the median of the paired rounds, --compare-allocation).
	TargetBalancedOffers = 0.95
)

// TargetCheck is one target, met or not.
type TargetCheck struct {
	Name, Measured string
	Met            *bool // nil: not measured
}

// targetChecks collects the targets' checks in the order the report lists them.
type targetChecks []TargetCheck

// check records a measured target, met or not.
func (c *targetChecks) check(name string, measured string, met bool) {
	*c = append(*c, TargetCheck{name, measured, boolp(met)})
}

// missing records a target the run did not measure.
func (c *targetChecks) missing(name string) {
	*c = append(*c, TargetCheck{Name: name, Measured: "not measured"})
}

func boolp(b bool) *bool { return &b }

// Targets evaluates the targets on r.
func (r *Report) Targets() []TargetCheck {
	var c targetChecks
	r.offersTargets(&c)
	r.writeTargets(&c)
	r.joinTargets(&c)
	r.memoryTarget(&c)
	if len(r.Allocation) > 0 {
		ratio, cpu := r.AllocationRatios()
		c.check(fmt.Sprintf("balanced allocation's offers throughput ≥ %.0f%% of greedy's (median of paired rounds)", 100*TargetBalancedOffers),
			fmt.Sprintf("%.1f%% over %d rounds (server CPU per request %.1f%%)", 100*ratio, len(r.Allocation), 100*cpu),
			ratio >= TargetBalancedOffers)
	}
	name := fmt.Sprintf("ready (engine, panel, counters loaded) ≤ %s", TargetReady)
	if r.Load > 0 {
		c.check(name, fmt.Sprintf("%s at %d campaigns / %d participants", r.Load.Round(100*time.Millisecond), r.Options.Campaigns, r.Options.Participants),
			r.Load <= TargetReady)
	} else {
		c.missing(name)
	}
	return c
}

// offersTargets checks GET /campaigns against the floor (throughput and closed-loop p99, of
// random participants and of distinct ones) and its open-loop p99 at half its maximum.
func (r *Report) offersTargets(c *targetChecks) {
	floor := r.Find(ScFloor, "closed")
	share := offersTarget(r.Options.Campaigns)
	for _, sc := range []struct{ scenario, what string }{
		{ScOffers, "random participants"},
		{ScOffersDistinct, "each participant once until the panel wraps around"},
	} {
		off := r.Find(sc.scenario, "closed")
		name := fmt.Sprintf("GET /campaigns at %d campaigns ≥ %.0f%% of the floor's throughput (%s)", r.Options.Campaigns, 100*share, sc.what)
		if off == nil || floor == nil || floor.Throughput <= 0 {
			c.missing(name)
			continue
		}
		ratio := off.Throughput / floor.Throughput
		c.check(name, fmt.Sprintf("%.0f%% (%.0f vs %.0f req/s)", 100*ratio, off.Throughput, floor.Throughput), ratio >= share)
		name = fmt.Sprintf("GET /campaigns closed-loop p99 ≤ %d× the floor's (%s)", TargetP99VsFloor, sc.what)
		p99, fp99 := off.Hist.Quantile(0.99), floor.Hist.Quantile(0.99)
		c.check(name, fmt.Sprintf("%.2f ms vs %.2f ms (%.1f×)", ms(p99), ms(fp99), float64(p99)/float64(max(fp99, 1))),
			p99 <= TargetP99VsFloor*fp99)
	}
	name := fmt.Sprintf("GET /campaigns open-loop p99 ≤ %s at half of max throughput", TargetP99AtHalf)
	if half := r.openNear(ScOffers, 0.5); half != nil {
		p99 := time.Duration(half.Hist.Quantile(0.99))
		c.check(name, fmt.Sprintf("p99 %.2f ms at %.0f req/s offered", ms(int64(p99)), half.Offered), p99 <= TargetP99AtHalf && half.Unsent == 0)
	} else {
		c.missing(name)
	}
}

// writeTargets checks the entries' and callbacks' durable rates (closed loop) and their p99
// at the target rates (open loop).
func (r *Report) writeTargets(c *targetChecks) {
	name := fmt.Sprintf("entries ≥ %d admitted/s durable (stored before the 302, fsync on), ≥ %.0f%% admitted", TargetEntriesPerSec, 100*TargetAdmittedShare)
	if e := r.Find(ScEntries, "closed"); e != nil {
		adm := e.Rate(e.OpCount(OpEntryAdmitted))
		c.check(name, fmt.Sprintf("%.0f admitted/s (%.0f%% of %.0f entry answers/s)", adm, 100*max(e.AdmittedShare(), 0), e.Throughput),
			adm >= TargetEntriesPerSec && e.AdmittedShare() >= TargetAdmittedShare)
	} else {
		c.missing(name)
	}
	name = fmt.Sprintf("callbacks ≥ %d completes/s durable", TargetCallbacksPerSec)
	if cb := r.Find(ScCallbacks, "closed"); cb != nil {
		done := cb.Rate(cb.OpCount(OpCallbackDone))
		c.check(name, fmt.Sprintf("%.0f completes/s", done), done >= TargetCallbacksPerSec)
	} else {
		c.missing(name)
	}
	for _, w := range []struct {
		scenario, what, supply string
		rate                   float64
	}{{ScEntries, "entries", "entry URLs", TargetEntriesPerSec}, {ScCallbacks, "callbacks", "admitted sessions", TargetCallbacksPerSec}} {
		name = fmt.Sprintf("%s p99 ≤ %s at %.0f/s (open loop)", w.what, TargetWriteP99, w.rate)
		p := r.openAt(w.scenario, w.rate)
		if p == nil {
			c.missing(name + ": the closed-loop maximum did not reach the rate")
			continue
		}
		if !p.ranWindow() {
			// A phase that ran out of entry URLs or admitted sessions measured too little, or
			// nothing: its p99 says nothing about the rate.
			c.missing(fmt.Sprintf("%s: the phase ran out of %s after %s of its %s window (%d answered)",
				name, w.supply, p.Span.Round(100*time.Millisecond), p.Window, p.Requests))
			continue
		}
		p99 := time.Duration(p.Hist.Quantile(0.99))
		c.check(name, fmt.Sprintf("p99 %.2f ms at %.0f/s offered (%.0f/s answered)", ms(int64(p99)), p.Offered, p.Throughput),
			p99 <= TargetWriteP99 && p.Unsent == 0)
	}
}

// joinTargets checks the entries while a second process starts beside the first (from its
// snapshot, and with Options.JoinFull with a full load) and the second's time to ready.
func (r *Report) joinTargets(c *targetChecks) {
	r.joinCheck(c, ScEntriesJoining, ", from the first's snapshot", r.JoinReady, r.JoinCPU)
	readyMax, at := TargetJoinReady, "1M"
	if r.Options.Participants >= 10_000_000 {
		readyMax, at = TargetJoinReadyHuge, "10M"
	}
	name := fmt.Sprintf("a second process started from a snapshot ready ≤ %s at %s participants", readyMax, at)
	if r.JoinReady > 0 {
		c.check(name, "ready in "+r.JoinReady.Round(100*time.Millisecond).String(), r.JoinReady <= readyMax)
	} else {
		c.missing(name)
	}
	if r.Options.JoinFull {
		r.joinCheck(c, ScEntriesJoiningFull, ", loading everything from PostgreSQL (no snapshot)", r.JoinReadyFull, r.JoinCPUFull)
	}
}

// joinCheck checks the entries' p99 of the joining phase scenario, whose second process
// (started as how says) was ready in readyIn after cpu of its own.
func (r *Report) joinCheck(c *targetChecks, scenario, how string, readyIn, cpu time.Duration) {
	name := fmt.Sprintf("entries p99 ≤ %s while a second process starts beside this one%s", TargetWriteP99, how)
	alone, joining := r.Find(ScEntriesAlone, "open"), r.Find(scenario, "open")
	if alone == nil || joining == nil {
		c.missing(name)
		return
	}
	p99, p99a := time.Duration(joining.Hist.Quantile(0.99)), time.Duration(alone.Hist.Quantile(0.99))
	ready, whole := "not ready within the phase", false
	if readyIn > 0 {
		ready = "ready in " + readyIn.Round(100*time.Millisecond).String()
		if cpu > 0 {
			ready += fmt.Sprintf(", %.2f cores on average until then", cpu.Seconds()/readyIn.Seconds())
		}
		// The phase starts with the second process and ends when it is ready, or sooner
		// when the entry URLs set aside for it ran out.
		whole = joining.Span >= readyIn-time.Second
	}
	over := fmt.Sprintf("over the %s from its start, the whole of it", joining.Span.Round(100*time.Millisecond))
	if !whole {
		over = fmt.Sprintf("over only the first %s of its start: the entry URLs set aside ran out", joining.Span.Round(100*time.Millisecond))
	}
	c.check(name, fmt.Sprintf("p99 %.2f ms at %.0f/s offered (%.2f ms alone; the second process %s; measured %s)",
		ms(int64(p99)), joining.Offered, ms(int64(p99a)), ready, over), p99 <= TargetWriteP99 && joining.Unsent == 0 && whole)
}

// memoryTarget checks the server's peak RSS, at the market sizes the target is for.
func (r *Report) memoryTarget(c *targetChecks) {
	limit, size := int64(TargetRSS), "1 GiB"
	if r.Options.Participants >= 10_000_000 {
		limit, size = TargetRSSHuge, "2.5 GiB"
	}
	name := fmt.Sprintf("peak RSS ≤ %s at 100k campaigns and %s participants", size, map[bool]string{true: "10M", false: "1M"}[limit == TargetRSSHuge])
	hwm := fmt.Sprintf("peak RSS %s at %d campaigns / %d participants", mib(r.ServerHWM), r.Options.Campaigns, r.Options.Participants)
	switch {
	case r.ServerHWM > 0 && r.Options.Campaigns >= 100_000 && r.Options.Participants >= 1_000_000:
		c.check(name, hwm, r.ServerHWM <= limit)
	case r.ServerHWM == 0:
		c.missing(name)
	default:
		*c = append(*c, TargetCheck{Name: name, Measured: hwm + " (not this size: run `switchboard bench --campaigns 100000 --participants 1000000`)"})
	}
}

// ranWindow reports whether the phase answered requests through at least nine tenths of its
// window: one that ran out of what it sends (entry URLs, admitted sessions) sooner measured
// only the time it ran, or nothing at all.
func (p *Phase) ranWindow() bool {
	return p.Requests > 0 && p.Span >= p.Window*9/10
}

// openAt returns the open-loop phase of scenario offered rate (within 1%), nil when none
// ran at it.
func (r *Report) openAt(scenario string, rate float64) *Phase {
	for _, p := range r.Phases {
		if p.Scenario == scenario && p.Mode == "open" && abs(p.Offered-rate) <= rate/100 {
			return p
		}
	}
	return nil
}

// openNear returns the open-loop phase of scenario whose offered rate is closest to
// fraction × the closed-loop maximum.
func (r *Report) openNear(scenario string, fraction float64) *Phase {
	c := r.Find(scenario, "closed")
	if c == nil {
		return nil
	}
	want := fraction * c.Throughput
	var best *Phase
	for _, p := range r.Phases {
		if p.Scenario == scenario && p.Mode == "open" {
			if best == nil || abs(p.Offered-want) < abs(best.Offered-want) {
				best = p
			}
		}
	}
	return best
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
