package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// loadRun is the load phases of one run against the measured server (and the floor): what
// every phase shares.
type loadRun struct {
	ctx         context.Context
	o           Options
	rep         *Report
	t           *Target
	srv         *server
	pgPID       int
	profile     string // the server's CPU profile ("": none)
	stmts       *statements
	client      *fasthttp.HostClient // the load's
	metrics     *fasthttp.HostClient // the server's /metrics
	metricsAddr string
}

// runLoad runs every load phase against the server (and the floor).
func runLoad(ctx context.Context, o Options, rep *Report, t *Target, srv *server, pgPID int, profile string, stmts *statements) error {
	metricsAddr := srv.metricsAddr(t.Addr)
	lr := &loadRun{ctx: ctx, o: o, rep: rep, t: t, srv: srv, pgPID: pgPID, profile: profile, stmts: stmts,
		client: NewClient(t.Addr, max(o.Connections, o.OpenConnections)), metrics: NewClient(metricsAddr, 1), metricsAddr: metricsAddr}
	// Is the supply interface served at all?
	probe := probeOffers(lr.client, t)
	if probe != "" {
		rep.note("GET /supply_api/v4/campaigns is not usable at this commit (%s): the offers, entries and mix scenarios were skipped", probe)
	}
	if probe == "" {
		lr.harvest()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lr.offersPhases()
		if len(rep.Harvest.Entries) == 0 {
			rep.note("no offers were harvested (no participant matched any campaign): entries and mix skipped")
		} else {
			lr.writePhases()
		}
	}
	if ctx.Err() != nil || probe == "" {
		return ctx.Err()
	}
	return lr.floorAlone()
}

// closed is the closed-loop load; open the open-loop one at rate.
func (lr *loadRun) closed() Load           { return Load{Workers: lr.o.Connections} }
func (lr *loadRun) open(rate float64) Load { return Load{Workers: lr.o.OpenConnections, Rate: rate} }

// phase measures scenario s with load l against target ("switchboard" or "floor", process
// pid), adds it to the report and says what it measured.
func (lr *loadRun) phase(target string, pid int, l Load, s *Scenario) *Phase {
	o, rep, srv := lr.o, lr.rep, lr.srv
	if lr.ctx.Err() != nil { // stopped: the phase running finishes, no other starts
		return &Phase{Result: &Result{Scenario: s.Name}, Target: target}
	}
	if l.Duration == 0 { // else the caller chose the window and its warm-up
		l.Duration, l.Warmup = o.Duration, o.Warmup
	}
	l.Client, l.Seed = lr.client, uint64(o.Seed)+uint64(len(rep.Phases))
	c := lr.metrics
	if target == "floor" {
		l.Client, c = srv.floorClient, nil
	}
	lr.stmts.reset(lr.ctx)
	switch {
	case target != "floor":
		label := s.Name + " max"
		if l.Rate > 0 {
			label = fmt.Sprintf("%s %.0f/s", s.Name, l.Rate)
		}
		srv.mem.mark(label, 0)
	case l.Rate <= 0:
		srv.mem.mark("floor (its own process)", 0)
	}
	p := measure(c, lr.metricsAddr, pid, lr.pgPID, l, s)
	p.Target = target
	rep.Phases = append(rep.Phases, p)
	lr.tell(p, s)
	return p
}

// tell writes a phase's figures to the progress output, and notes a phase that repeated
// participants.
func (lr *loadRun) tell(p *Phase, s *Scenario) {
	o, r := lr.o, p.Result
	rate := "max"
	if r.Mode == "open" {
		rate = fmt.Sprintf("%.0f/s", r.Offered)
	}
	o.progress("%-8s %-6s %-8s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  p99.9 %7.2f ms  errors %d  [%s]",
		s.Name, r.Mode, rate, r.Throughput, r.P(0.5), r.P(0.99), r.P(0.999), r.Errors, describeStatus(r.Status))
	if share := p.AdmittedShare(); share >= 0 {
		o.progress("  entries: %.0f admitted/s, %.0f refused/s (%.1f%% admitted); server verdicts %s",
			p.Rate(p.OpCount(OpEntryAdmitted)), p.Rate(p.OpCount(OpEntryRefused)+p.OpCount(OpEntryBlocked)), 100*share,
			describeVerdicts(p.Verdicts))
	}
	if n := p.OpCount(OpCallbackDone); n > 0 {
		o.progress("  callbacks: %.0f completes/s", p.Rate(n))
	}
	if h := p.CacheHitShare(); h >= 0 {
		o.progress("  offers: %.1f%% of %.0f answers from the answer cache", 100*h, p.CacheHits+p.CacheMisses)
	}
	if p.Repeats > 0 {
		o.progress("  %d requests repeated a participant the phase had asked for: the panel wrapped around", p.Repeats)
		lr.rep.note("%s %s: %d of its requests repeated a participant it had asked for (the panel of %d is smaller than the phase), so some of its answers may come from the answer cache",
			s.Name, r.Mode, p.Repeats, len(lr.t.Market.Participants))
	}
	if p.Target != "floor" {
		for _, line := range lr.stmts.top(lr.ctx, r.Requests) {
			o.progress("  %s", line)
		}
	}
}

// serve measures scenario s with load l against the measured server.
func (lr *loadRun) serve(l Load, s *Scenario) *Phase {
	return lr.phase("switchboard", lr.srv.pid(), l, s)
}

// floor measures the floor with load l.
func (lr *loadRun) floor(l Load) *Phase {
	return lr.phase("floor", lr.srv.floor.Process.Pid, l, lr.t.FloorScenario(ScFloor))
}

// startFloor starts the floor: same client, same requests, a fixed body of the offers
// answer's size (the harvest's median).
func (lr *loadRun) startFloor() bool {
	rep := lr.rep
	rep.FloorSize = 2500
	if rep.Harvest != nil && rep.Harvest.MedianBytes > 0 {
		rep.FloorSize = rep.Harvest.MedianBytes
	}
	if err := lr.srv.startFloor(lr.ctx, lr.o, rep.FloorSize); err != nil {
		rep.note("the floor server did not start: %v", err)
		return false
	}
	return true
}

// profiled runs the phase name with the server's CPU profile on when it is the one the
// options profile.
func (lr *loadRun) profiled(name string, run func() *Phase) *Phase {
	on := lr.profile != "" && (name == lr.o.ProfilePhase || name == ScOffers && lr.o.ProfilePhase == "")
	if on {
		lr.srv.signal(syscall.SIGUSR1)
	}
	p := run()
	if on {
		lr.srv.signal(syscall.SIGUSR2)
	}
	return p
}

// harvest collects offer entry URLs for the entry phases, each to be used once: enough for
// the entry phases at up to 8,000/s (a phase that runs out ends early, and says so), and the
// joining phases' at JoinRate.
func (lr *loadRun) harvest() {
	o, rep, t := lr.o, lr.rep, lr.t
	entryWindow := (o.Duration + o.Warmup).Seconds() * 2.5
	joinWindow := joinSpan(o).Seconds()
	want := max(2000, int(8000*entryWindow+JoinRate*joinWindow))
	// A small panel gives more URLs per participant (up to maxEntryPerParticipant) so
	// that the entry phases do not run out on a fast machine.
	n := max(len(t.Market.Participants), 1)
	per := min(max(entryPerParticipant, (want+n-1)/n), maxEntryPerParticipant)
	want = min(want, per*n)
	o.progress("harvesting up to %d offer entry URLs", want)
	rep.Harvest = t.HarvestEntries(lr.client, o.Connections, want, per, max(20*time.Second, 4*o.Duration)+joinURLWindow, uint64(o.Seed))
	if lr.ctx.Err() != nil {
		return
	}
	o.progress("harvested %d entry URLs for %d participants and %d campaigns from %d answers in %s (median answer %d bytes, %.1f offers each, %.0f%% eligible)",
		len(rep.Harvest.Entries), rep.Harvest.Participants, rep.Harvest.Campaigns, rep.Harvest.Requests,
		rep.Harvest.Took.Round(time.Millisecond), rep.Harvest.MedianBytes, rep.Harvest.MeanOffers, 100*rep.Harvest.EligibleShare)
}

// offersPhases measures GET /campaigns at its maximum and at open-loop rates, with the
// floor's phases beside the offers phases they are compared with: its maximum just before
// theirs, each open-loop rate right after the offers' at that rate. Measured minutes apart
// (the floor last), the two throughputs of one ratio came from a machine in two states:
// between two 10k runs of one afternoon the offers' share fell from 68% to 44% while their
// own rate rose (26.7k to 29.8k req/s), the floor's having gone from 39k to 68k.
func (lr *loadRun) offersPhases() {
	o, t := lr.o, lr.t
	floorUp := lr.startFloor()
	if floorUp {
		lr.floor(lr.closed())
	}
	p := lr.profiled(ScOffers, func() *Phase { return lr.serve(lr.closed(), t.OffersScenario(ScOffers)) })
	offersMax := p.Throughput
	lr.serve(lr.closed(), t.OffersDistinctScenario(ScOffersDistinct, uint64(o.Seed)+17))
	rates := o.Rates
	if len(rates) == 0 {
		for _, f := range o.RateFractions {
			rates = append(rates, roundRate(f*offersMax))
		}
	}
	for _, r := range rates {
		if r > 0 {
			lr.serve(lr.open(r), t.OffersScenario(ScOffers))
			if floorUp {
				lr.floor(lr.open(r))
			}
		}
	}
	lr.srv.stopFloor()
}

// writePhases measures the entries, the mix, a second process joining and the callbacks on
// the harvested entry URLs. The joining phases' URLs are set aside first: on a fast machine
// the phases before them would use up the harvest and leave them nothing to measure. They
// may take seven tenths of it: at 100k campaigns the harvest is bounded by the campaigns'
// rooms (about 235,000 URLs with quota targets ×10 when every participant is asked), the
// joining phases need 160,000–220,000 at JoinRate (a start of 2m35s–3m42s), and the entries
// and mix phases used 61,000 at 4,800 admitted entries/s (2026-12-02); with half, the join's
// share once ran out 52–56 s into a 62–65-s start.
func (lr *loadRun) writePhases() {
	o, rep, t := lr.o, lr.rep, lr.t
	sessions := &Sessions{max: 1 << 20}
	all := rep.Harvest.Entries
	reserve := min(len(all)*7/10, int(JoinRate*joinSpan(o).Seconds()))
	entries, joining := NewEntries(all[:len(all)-reserve]), NewEntries(all[len(all)-reserve:])
	ep := lr.entriesPhases(entries, sessions)
	if entries.Left() == 0 {
		rep.note("the %d harvested entry URLs for the entries and mix phases ran out (each is used once; %d more were set aside for the joining phases): a phase that ran out ended early and its rates are over the time it ran; the mix sent offers requests in place of its entries after that",
			len(all)-reserve, reserve)
	}
	if joining.Left() > 0 && lr.ctx.Err() == nil {
		joinPhases(lr.ctx, o, rep, t, lr.srv, ep, joining, sessions, func(l Load, s *Scenario) { lr.serve(l, s) })
	}
	rep.EntriesUsed = entries.Used() + joining.Used()
	if sessions.Len() == 0 {
		rep.note("no admitted session was left for the callbacks phase")
		return
	}
	lr.callbacksPhases(sessions)
}

// entriesPhases measures the entries and the mix, closed loop and open, and returns the
// entries' closed-loop phase.
func (lr *loadRun) entriesPhases(entries *Entries, sessions *Sessions) *Phase {
	o, t := lr.o, lr.t
	ep := lr.profiled(ScEntries, func() *Phase {
		return lr.serve(lr.closed(), t.EntriesScenario(ScEntries, entries, sessions))
	})
	if r := targetOrHalf(ep.Rate(ep.OpCount(OpEntryAdmitted)), TargetEntriesPerSec); r > 0 && entries.Left() > 0 {
		lr.serve(lr.open(r), t.EntriesScenario(ScEntries, entries, sessions))
	}
	mp := lr.serve(lr.closed(), t.MixScenario(ScMix, o.Mix[0], o.Mix[1], o.Mix[2], entries, sessions))
	if r := roundRate(mp.Throughput / 2); r > 0 {
		lr.serve(lr.open(r), t.MixScenario(ScMix, o.Mix[0], o.Mix[1], o.Mix[2], entries, sessions))
	}
	return ep
}

// callbacksPhases measures the callbacks on the admitted sessions. Half of them are kept for
// the open-loop phase: each is completed once, and the closed loop can answer all of them.
func (lr *loadRun) callbacksPhases(sessions *Sessions) {
	t := lr.t
	later := sessions.split()
	cp := lr.profiled(ScCallbacks, func() *Phase {
		return lr.serve(lr.closed(), t.CallbacksScenario(ScCallbacks, sessions))
	})
	if r := targetOrHalf(cp.Rate(cp.OpCount(OpCallbackDone)), TargetCallbacksPerSec); r > 0 && later.Len() > 0 {
		lr.serve(lr.open(r), t.CallbacksScenario(ScCallbacks, later))
	}
}

// floorAlone measures the floor alone, at its own maximum and fractions of it, when no
// offers phase ran.
func (lr *loadRun) floorAlone() error {
	if !lr.startFloor() {
		return nil
	}
	fp := lr.floor(lr.closed())
	for _, f := range lr.o.RateFractions {
		if r := roundRate(f * fp.Throughput); r > 0 {
			lr.floor(lr.open(r))
		}
	}
	lr.srv.stopFloor()
	return lr.ctx.Err()
}

// targetOrHalf is the open-loop rate of a write phase whose closed-loop maximum was max:
// the target rate when the maximum reaches it (its latency there is a target too), else
// half the maximum.
func targetOrHalf(max, target float64) float64 {
	if max >= target {
		return target
	}
	return roundRate(max / 2)
}

// entryPerParticipant is how many offer entry URLs the harvest keeps of one participant's
// offers answer when the panel is large enough; maxEntryPerParticipant when it is not.
const entryPerParticipant, maxEntryPerParticipant = 4, 16

// roundRate rounds a rate to two significant digits.
func roundRate(r float64) float64 {
	if r <= 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 2, 64), 64)
	return f
}

// probeOffers returns "" when GET /campaigns answers 200 for a seeded participant.
func probeOffers(c *fasthttp.HostClient, t *Target) string {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	t.setOffersRequest(req, &t.Market.Participants[0], nil)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.DoTimeout(req, resp, 10*time.Second)
		switch {
		case err != nil:
			return err.Error()
		case resp.StatusCode() == fasthttp.StatusNotFound:
			return "404: the route is not registered"
		case resp.StatusCode() != fasthttp.StatusOK:
			return fmt.Sprintf("status %d: %.200s", resp.StatusCode(), resp.Body())
		case strings.Contains(string(resp.Body()), `"identifier":"profile"`) && time.Now().Before(deadline):
			// The panel is still loading: the participant looks unprofiled.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return ""
	}
}
