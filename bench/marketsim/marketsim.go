// Package marketsim plays a synthetic market forward in time through the
// real engine and its real allocation code, on a virtual clock, so that
// allocation policies can be compared on what they deliver: quotas filled by
// their deadline, partner revenue and completes per visit, and how fast a
// new campaign's true conversion is learned. It is a model, not a forecast;
// every assumption of the generator is a field of Config, and Shapes names
// the grid of markets the evaluation runs (docs/allocation.md, "Evaluation").
//
// The market: campaigns in field at the start and campaigns arriving during
// the run, each leaving at the end of its field period; a panel whose
// members visit at their own daily rates in each partner's daily wave; a
// participant's chance to complete a campaign that depends on its profile
// (a hidden screener question per campaign) and on its own quality; offers
// chosen by position and length of interview; sessions that take time
// (screen-outs early, completes after about the LOI) and are abandoned more
// often the longer the interview, an abandoned session holding its place in
// the quotas until the engine's timeout (2 × LOI + 10 minutes).
package marketsim

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// Config describes one simulated market. Zero fields take the defaults
// documented on each.
type Config struct {
	Campaigns    int               // campaigns in field at the start (default 60)
	Arriving     int               // campaigns entering during the run, each at a whole hour drawn uniformly
	Participants int               // panel size (default 4,000)
	Days         int               // simulated days (default 7)
	Seed         int64             // same seed, same market, visits and outcome draws
	Allocation   engine.Allocation // policy under test
	// RerouteAttempts is the partners' reroute_attempts (docs/rules.md
	// §10, 0..5, default 0 = off): while a chain has attempts left, a
	// session that screens out, or an entry refused because the campaign
	// can no longer take the participant, continues the chain with the
	// next-ranked campaign the participant is eligible for then and has not
	// tried in the chain. A complete or an abandoned session ends it.
	RerouteAttempts int
	// Demand sizes the quotas: a non-global quota asks for Demand × its
	// buyer's feasibility estimate (the completes the panel's eligible
	// participants would bring over the field period at the stated
	// incidence, counting 30% of their visits: they have other offers) ×
	// a log-normal factor (σ 0.5), within QuotaMin..QuotaMax (default 1,
	// and 5..500 completes). Above 1 the market is short of supply. A global quota caps its
	// campaign at 0.6–1.4 × the sum of its non-global targets; a daily cap,
	// where synth draws one, at 1.5–2.5 × the campaign's target per day.
	Demand             float64
	QuotaMin, QuotaMax int
	// FieldMin and FieldMax bound a campaign's field period in days,
	// uniform (default 3 and 14).
	FieldMin, FieldMax int
	// RefreshEvery is the simulated time between weight refreshes
	// (seconds, default 6 h).
	RefreshEvery int64
	// TruthLow and TruthHigh bound a campaign's true conversion over the
	// panel: its stated incidence × a uniform draw in [TruthLow, TruthHigh]
	// (default 0.5 and 1.5), at most 0.95.
	TruthLow, TruthHigh float64
	// ProfileContrast is how much a campaign's hidden screener matters: a
	// participant outside it converts at ProfileContrast × the campaign's
	// mean, one inside at the factor that keeps the panel's mean (default
	// 0.3; 1 for no screener).
	ProfileContrast float64
	// PartnerShares are the revenue shares of the supply partners; each
	// participant belongs to partner (id mod len) (default 0.6, 0.5, 0.7).
	PartnerShares []float64
	// WaveAmplitude shapes each partner's daily wave: the hourly visit
	// chance is the participant's daily rate / 24 × (1 + WaveAmplitude ×
	// cos(2π (hour − peak) / 24)), partner j peaking at 8 + 16·j/partners
	// hours UTC (default 0.8).
	WaveAmplitude float64
	// PositionBias is the chance that a participant picks the offer at each
	// position of the list shown, before its length (ChoiceLOI); the rest
	// leaves without entering (default 0.55, 0.25, 0.12: three offers
	// looked at).
	PositionBias []float64
	// ChoiceLOI scales how the length of interview puts participants off:
	// an offer's chance is its position's × exp(−(LOI − 5) / ChoiceLOI)
	// (minutes, default 40).
	ChoiceLOI float64
	// DropLOI scales abandonment: a participant who would complete abandons
	// the session with chance 1 − exp(−LOI / DropLOI) (minutes, default 100).
	DropLOI float64
	// NewCampaignAt is when the probe campaign enters the market (seconds
	// after the start, default one day): stated incidence 20%, true
	// conversion 40% (2× its prior), a broad audience, a target of 40. It is
	// left out of the fill figures.
	NewCampaignAt int64
	// FairWindow is the number of the probe's eligible visits over which
	// its share of offers is compared with its fair share (default 200).
	FairWindow int
}

// ErrReroute is returned by Run for RerouteAttempts outside 0..5 (docs/rules.md §10).
var ErrReroute = errors.New("marketsim: reroute attempts must be 0..5")

func (cfg *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Campaigns, 60)
	def(&cfg.Participants, 4000)
	def(&cfg.Days, 7)
	def(&cfg.QuotaMin, 5)
	def(&cfg.QuotaMax, 500)
	def(&cfg.FieldMin, 3)
	def(&cfg.FieldMax, 14)
	def(&cfg.FairWindow, 200)
	cfg.QuotaMax = max(cfg.QuotaMax, cfg.QuotaMin)
	cfg.FieldMax = max(cfg.FieldMax, cfg.FieldMin)
	cfg.Arriving = max(cfg.Arriving, 0)
	if cfg.Demand <= 0 {
		cfg.Demand = 1
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 6 * 3600
	}
	if cfg.TruthLow <= 0 && cfg.TruthHigh <= 0 {
		cfg.TruthLow, cfg.TruthHigh = 0.5, 1.5
	}
	if cfg.ProfileContrast <= 0 {
		cfg.ProfileContrast = 0.3
	}
	if len(cfg.PartnerShares) == 0 {
		cfg.PartnerShares = []float64{0.6, 0.5, 0.7}
	}
	if cfg.WaveAmplitude <= 0 {
		cfg.WaveAmplitude = 0.8
	}
	if len(cfg.PositionBias) == 0 {
		cfg.PositionBias = []float64{0.55, 0.25, 0.12}
	}
	if cfg.ChoiceLOI <= 0 {
		cfg.ChoiceLOI = 40
	}
	if cfg.DropLOI <= 0 {
		cfg.DropLOI = 100
	}
	if cfg.NewCampaignAt <= 0 {
		cfg.NewCampaignAt = 86400
	}
}

// Result is what a run delivered.
type Result struct {
	Allocation engine.Allocation
	Reroute    int // Config.RerouteAttempts
	Seed       int64
	Arrivals   int // participant visits
	Offered    int // visits with at least one offer
	Entries    int // visits that entered a campaign (a chain counts once)
	Sessions   int // sessions entered, re-routed ones included
	Rerouted   int // sessions entered through re-routing
	// LeftEmpty counts visits that entered at least one session and ended
	// without a complete: participants who gave their time for nothing.
	LeftEmpty  int
	Completes  int // completes within the entered campaign's field period (the probe's included)
	Terminates int // sessions that screened out
	Abandoned  int // sessions abandoned (no outcome; released at the engine's timeout)
	Campaigns  int // campaigns simulated (the probe left out)
	// Due counts the campaigns (and DueQuotas their non-global quotas)
	// whose deadline falls within the run; Filled and QuotasFilled those of
	// them filled by it (the probe left out).
	Due, Filled, DueQuotas, QuotasFilled int
	Earnings                             float64 // partner earnings, USD (cpi × partner share per complete)
	BuyerCost                            float64 // what buyers paid, USD (cpi per complete)
	// ProbeSessions and ProbeHours are the sessions and simulated hours
	// the probe campaign needed before the engine's conversion estimate
	// reached 90% of its true conversion (-1: not within the run).
	ProbeSessions int
	ProbeHours    float64
	// ProbeTotal is the probe's sessions over the whole run.
	ProbeTotal int
	// ProbeFairSessions is the probe's sessions when, over its last
	// Config.FairWindow eligible visits, it was first shown at least 80% as
	// often as it would have been had the engine known its true conversion
	// (its fair share of offers: ranked by its true EPC × the policy's
	// weight, without exploration bonus); -1: not within the run.
	ProbeFairSessions int
	// ProbeShown and ProbeFair count the probe's eligible visits on which
	// it was shown, and on which it would have been shown at its true
	// conversion, over the whole run.
	ProbeShown, ProbeFair int
}

// CompletesPer1000 is completes per 1,000 participant visits.
func (r Result) CompletesPer1000() float64 { return 1000 * ratio(r.Completes, r.Arrivals) }

// CampaignsFilled is the share of campaigns due within the run that filled by their deadline.
func (r Result) CampaignsFilled() float64 { return ratio(r.Filled, r.Due) }

// QuotasFilledShare is the share of quotas due within the run that filled by their deadline.
func (r Result) QuotasFilledShare() float64 { return ratio(r.QuotasFilled, r.DueQuotas) }

// LeftEmptyPer1000 is visits that entered and left without a complete, per 1,000 visits.
func (r Result) LeftEmptyPer1000() float64 { return 1000 * ratio(r.LeftEmpty, r.Arrivals) }

// ProbeShareOfFair is how often the probe was shown against how often it
// would have been at its true conversion, over the run.
func (r Result) ProbeShareOfFair() float64 { return ratio(r.ProbeShown, r.ProbeFair) }

// TermsPerComplete is screen-outs per complete.
func (r Result) TermsPerComplete() float64 { return ratio(r.Terminates, r.Completes) }

// RevenuePerVisit is partner revenue per visit, USD.
func (r Result) RevenuePerVisit() float64 { return r.Earnings / float64(max(r.Arrivals, 1)) }

// CostPerComplete is what buyers paid per complete, USD.
func (r Result) CostPerComplete() float64 { return r.BuyerCost / float64(max(r.Completes, 1)) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// String formats the result as one line.
func (r Result) String() string {
	return fmt.Sprintf("%-8s reroute %d seed %d visits %d completes/1k %.1f campaigns filled %d/%d quotas filled %d/%d terms/complete %.2f abandoned %d revenue/visit $%.4f cost/complete $%.2f probe %d sessions %.0f h",
		r.Allocation, r.Reroute, r.Seed, r.Arrivals, r.CompletesPer1000(), r.Filled, r.Due, r.QuotasFilled, r.DueQuotas,
		r.TermsPerComplete(), r.Abandoned, r.RevenuePerVisit(), r.CostPerComplete(), r.ProbeSessions, r.ProbeHours)
}

// probeTruth is the probe campaign's true conversion; probeIncidence its
// stated incidence (percent), half of it.
const (
	probeTruth     = 0.40
	probeIncidence = 20
	// probeTarget is the probe's target: about 100 sessions at its true
	// conversion, past the 80 its estimate needs on average.
	probeTarget = 40
)

// Event kinds.
const (
	evVisit   = iota // a participant arrives
	evOutcome        // a session's complete or screen-out reaches the engine
	evRelease        // an abandoned session times out
)

// event is something that happens at a time: a visit, or the end of a
// session of a chain.
type event struct {
	at, seq  int64
	kind     uint8
	done     bool // evOutcome: a complete
	campaign int64
	quotas   []int64
	ch       *chain
}

// events is a min-heap of events by time, then by order of scheduling.
type events []*event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// chain is one visit's path through sessions: the campaigns tried and the
// re-routing attempts used.
type chain struct {
	pi                 int // participant index
	visit              uint64
	tried              []int64
	attempts           int
	entered, completed bool
}

// sim is one run's state.
type sim struct {
	cfg     Config
	e       *engine.Engine
	panel   *engine.Panel
	ps      []simParticipant
	cs      []simCampaign // by campaign id − 1
	res     Result
	queue   events
	seq     int64
	entries map[[2]int64]uint64 // sessions per (participant, campaign), for the draws
	next    []engine.Offer
	// the probe's learning
	probe                         *simCampaign
	probeSessions, probeCompletes int
	fair                          *fairWindow
	probeQuotas, scratchQuotas    []int64
	shown                         int
	start                         int64
}

// Run plays the market of cfg for cfg.Days days.
func Run(cfg Config) (Result, error) {
	if cfg.RerouteAttempts < 0 || cfg.RerouteAttempts > 5 {
		return Result{}, ErrReroute
	}
	cfg.defaults()
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x51))
	start := synth.Now / 86400 * 86400
	stop := start + int64(cfg.Days)*86400
	ps := newParticipants(&cfg, r)
	cs := newMarket(&cfg, r, ps, start)
	s := &sim{cfg: cfg, e: engine.New(nil), panel: engine.NewPanel(), ps: ps, cs: cs,
		entries: make(map[[2]int64]uint64), fair: newFairWindow(cfg.FairWindow), shown: len(cfg.PositionBias), start: start}
	s.probe = &cs[len(cs)-1]
	s.res = Result{Allocation: cfg.Allocation, Reroute: cfg.RerouteAttempts, Seed: cfg.Seed, Campaigns: len(cs) - 1,
		ProbeSessions: -1, ProbeHours: -1, ProbeFairSessions: -1}
	var initial []engine.Campaign
	for i := range cs {
		if cs[i].arrive <= start {
			initial = append(initial, cs[i].def)
		}
	}
	s.e.Load(initial)
	ctr := s.e.Counters()
	for i := range cs {
		c := &cs[i]
		total := int64(0)
		for j, n := range c.before {
			ctr.SetQuota(c.quotas[j], engine.QuotaCounts{Completes: n, Entries: int64(float64(n) / max(c.mean, 0.05))})
			total += n
		}
		if total > 0 {
			for _, q := range c.def.Quotas {
				if q.Global {
					ctr.SetQuota(q.ID, engine.QuotaCounts{Completes: total})
				}
			}
			ctr.SetCampaign(c.def.ID, engine.CampaignCounts{Sessions: int64(float64(total) / max(c.mean, 0.05)), Completes: total})
		}
	}
	for i := range ps {
		// A month of history at its own rate, so supply estimates see it.
		known := false
		for d := 30; d > 0; d-- {
			if r.Float64() >= ps[i].rate && d > 1 {
				continue
			}
			at := start - int64(d)*86400
			if known {
				s.panel.Touch(ps[i].p.ID, at)
				continue
			}
			if _, err := s.panel.Upsert(1, strconv.FormatInt(ps[i].p.ID, 10), ps[i].p, at); err != nil {
				return Result{}, err
			}
			known = true
		}
	}
	s.e.SetAllocation(cfg.Allocation, s.panel)
	// Visits draw from their own stream, so every policy sees the same ones.
	ra := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xa1))
	np := len(cfg.PartnerShares)
	waves := make([]float64, np)
	lastRefresh := int64(math.MinInt64 / 2)
	visits := uint64(0)
	for now := start; now < stop; now += 3600 {
		var arriving []engine.Campaign
		for i := range cs {
			if cs[i].arrive == now && now > start {
				arriving = append(arriving, cs[i].def)
			}
		}
		if len(arriving) > 0 {
			s.e.Apply(arriving, nil)
		}
		if now-lastRefresh >= cfg.RefreshEvery {
			s.e.RefreshAllocation(now)
			lastRefresh = now
		}
		hour := float64((now % 86400) / 3600)
		for j := range waves {
			peak := 8 + 16*float64(j)/float64(np)
			waves[j] = 1 + cfg.WaveAmplitude*math.Cos(2*math.Pi*(hour-peak)/24)
		}
		for i := range ps {
			if ra.Float64() >= ps[i].rate/24*waves[ps[i].partner] {
				continue
			}
			visits++
			s.push(&event{at: now + ra.Int64N(3600), kind: evVisit, ch: &chain{pi: i, visit: visits}})
		}
		for s.queue.Len() > 0 && s.queue[0].at < now+3600 {
			s.handle(heap.Pop(&s.queue).(*event))
		}
		// Campaigns leave the market at the end of their field period.
		var gone []int64
		for i := range cs {
			c := &cs[i]
			if !c.ended && c.end <= now+3600 && c.arrive <= now {
				s.close(c)
				gone = append(gone, c.def.ID)
			}
		}
		if len(gone) > 0 {
			s.e.Apply(nil, gone)
		}
	}
	for i := range cs[:len(cs)-1] {
		c := &cs[i]
		if !c.ended {
			continue
		}
		s.res.Due++
		s.res.DueQuotas += len(c.quotas)
		s.res.QuotasFilled += c.quotasFilled
		if c.filled {
			s.res.Filled++
		}
	}
	s.res.ProbeTotal = s.probeSessions
	s.res.ProbeShown, s.res.ProbeFair = s.fair.shownAll, s.fair.fairAll
	return s.res, nil
}

func (s *sim) push(ev *event) {
	s.seq++
	ev.seq = s.seq
	heap.Push(&s.queue, ev)
}

// close records, at the end of c's field period, which of its non-global
// quotas are full.
func (s *sim) close(c *simCampaign) {
	c.ended = true
	c.filled = true
	ctr := s.e.Counters()
	for i, q := range c.quotas {
		if ctr.Quota(q).Completes >= c.targets[i] {
			c.quotasFilled++
		} else {
			c.filled = false
		}
	}
}

func (s *sim) handle(ev *event) {
	switch ev.kind {
	case evVisit:
		s.visit(ev.ch, ev.at)
	case evOutcome:
		s.outcome(ev)
	case evRelease:
		s.e.Counters().ReleaseSession(ev.quotas)
		s.end(ev.ch)
	}
}

// visit is a participant's arrival: the offers, the probe's fair-share
// bookkeeping, the participant's choice and the chain's first entry.
func (s *sim) visit(ch *chain, at int64) {
	sp := &s.ps[ch.pi]
	s.res.Arrivals++
	s.panel.Touch(sp.p.ID, at)
	p, _ := s.panel.GetByID(sp.p.ID)
	share := s.cfg.PartnerShares[sp.partner]
	// One more offer than are looked at, to judge the probe's fair share.
	dst := s.e.Match(p, share, at, s.shown+1, s.next[:0])
	s.next = dst
	if pr := s.probe; at >= pr.arrive && at < pr.end {
		var ok bool
		if s.probeQuotas, ok = s.e.Eligible(p, pr.def.ID, at, s.probeQuotas[:0]); ok {
			// Known truth needs no exploration: the oracle score is the true
			// EPC times the policy's weight alone.
			w, _, _ := s.e.Snapshot().Weight(pr.def.ID)
			oracle := float64(pr.def.CPICents) / 100 * share * probeTruth * w
			if s.fair.add(probeShown(dst, s.shown, pr.def.ID), probeFair(dst, s.shown, pr.def.ID, oracle)) && s.res.ProbeFairSessions < 0 {
				s.res.ProbeFairSessions = s.probeSessions
			}
		}
	}
	if len(dst) > s.shown {
		dst = dst[:s.shown]
	}
	if len(dst) == 0 {
		return
	}
	s.res.Offered++
	pos := s.cfg.choose(draw(s.cfg.Seed, ch.visit, 1), len(dst), func(k int) int { return s.cs[dst[k].CampaignID-1].def.LOI })
	if pos < 0 {
		return // looked and left
	}
	s.enter(ch, p, dst[pos].CampaignID, at)
}

// choose returns the position of the offer a participant enters among n
// shown for the draw x in [0, 1), or −1 when it leaves: position k takes
// PositionBias[k] × exp(−(LOI − 5) / ChoiceLOI) of the draws.
func (cfg *Config) choose(x float64, n int, loi func(k int) int) int {
	for k := range min(n, len(cfg.PositionBias)) {
		pk := cfg.PositionBias[k] * math.Exp(-max(float64(loi(k))-5, 0)/cfg.ChoiceLOI)
		if x < pk {
			return k
		}
		x -= pk
	}
	return -1
}

// enter tries to start a session of the chain in campaign id at time at;
// refused, it re-routes while the chain has attempts left.
func (s *sim) enter(ch *chain, p *engine.Participant, id int64, at int64) {
	for {
		quotas, ok := s.e.Eligible(p, id, at, s.scratchQuotas[:0])
		s.scratchQuotas = quotas
		if ok {
			s.session(ch, p, id, slices.Clone(quotas), at)
			return
		}
		ch.tried = append(ch.tried, id)
		if !s.reroute(ch, at, &p, &id) {
			s.end(ch)
			return
		}
	}
}

// reroute picks the chain's next campaign: the best-ranked one the
// participant may enter now and has not tried in the chain, while the chain
// has attempts left (docs/rules.md §10).
func (s *sim) reroute(ch *chain, at int64, p **engine.Participant, id *int64) bool {
	if ch.attempts >= s.cfg.RerouteAttempts {
		return false
	}
	ch.attempts++
	sp := &s.ps[ch.pi]
	*p, _ = s.panel.GetByID(sp.p.ID) // with this chain's entries
	s.next = s.e.Match(*p, s.cfg.PartnerShares[sp.partner], at, len(ch.tried)+1, s.next[:0])
	for _, o := range s.next {
		if !slices.Contains(ch.tried, o.CampaignID) {
			*id = o.CampaignID
			return true
		}
	}
	return false
}

// session starts a session and schedules its end: a complete after about
// the LOI, a screen-out within the first quarter of it, or an abandonment
// the engine learns of only at its timeout.
func (s *sim) session(ch *chain, p *engine.Participant, id int64, quotas []int64, at int64) {
	if !ch.entered {
		s.res.Entries++
		ch.entered = true
	}
	s.res.Sessions++
	if ch.attempts > 0 {
		s.res.Rerouted++
	}
	s.e.Counters().RecordEntry(id, quotas)
	s.panel.RecordEntry(p.ID, id, at)
	c := &s.cs[id-1]
	sp := &s.ps[ch.pi]
	k := [2]int64{p.ID, id}
	n := s.entries[k]
	s.entries[k] = n + 1
	seed, pid, cid := s.cfg.Seed, uint64(p.ID), uint64(id)
	loi := float64(c.def.LOI)
	ev := &event{campaign: id, quotas: quotas, ch: ch}
	switch {
	case draw(seed, pid, cid, n, 2) >= c.conversion(sp):
		ev.kind, ev.at = evOutcome, at+int64(60*(1+0.25*loi*draw(seed, pid, cid, n, 4)))
	case draw(seed, pid, cid, n, 3) < 1-math.Exp(-loi/s.cfg.DropLOI):
		ev.kind, ev.at = evRelease, at+int64(60*(2*loi+10))
		s.res.Abandoned++
	default:
		ev.kind, ev.done, ev.at = evOutcome, true, at+int64(60*loi*(0.7+0.6*draw(seed, pid, cid, n, 4)))
	}
	if traceSession != nil {
		traceSession(c, sp, at, ev)
	}
	s.push(ev)
}

// traceSession, when set (by tests), sees every session started: its
// campaign, participant, start and scheduled end.
var traceSession func(c *simCampaign, sp *simParticipant, at int64, end *event)

// outcome is a session's complete or screen-out reaching the engine.
func (s *sim) outcome(ev *event) {
	s.e.Counters().RecordOutcome(ev.campaign, ev.quotas, ev.done, ev.at)
	c := &s.cs[ev.campaign-1]
	ch := ev.ch
	if c.probe {
		s.probeSessions++
		if ev.done {
			s.probeCompletes++
		}
		if s.res.ProbeSessions < 0 && engine.Conversion(probeIncidence, int64(s.probeSessions), int64(s.probeCompletes)) >= 0.9*probeTruth {
			s.res.ProbeSessions = s.probeSessions
			s.res.ProbeHours = float64(ev.at-c.arrive) / 3600
		}
	}
	if ev.done {
		ch.completed = true
		if ev.at < c.end {
			share := s.cfg.PartnerShares[s.ps[ch.pi].partner]
			s.res.Completes++
			s.res.Earnings += float64(c.def.CPICents) / 100 * share
			s.res.BuyerCost += float64(c.def.CPICents) / 100
		}
		s.end(ch)
		return
	}
	s.res.Terminates++
	ch.tried = append(ch.tried, ev.campaign)
	var p *engine.Participant
	id := int64(0)
	if !s.reroute(ch, ev.at, &p, &id) {
		s.end(ch)
		return
	}
	s.enter(ch, p, id, ev.at)
}

// end closes a chain.
func (s *sim) end(ch *chain) {
	if ch.entered && !ch.completed {
		s.res.LeftEmpty++
	}
}

// probeShown reports whether the probe is among the first n offers.
func probeShown(offers []engine.Offer, n int, probe int64) bool {
	for i := range min(n, len(offers)) {
		if offers[i].CampaignID == probe {
			return true
		}
	}
	return false
}

// probeFair reports whether the probe, ranked at its oracle score (its
// score had the engine known its true conversion), would be among the
// first n offers: fewer than n other offers beat it. offers must be the
// top n+1, so that every other offer that could beat it is there.
func probeFair(offers []engine.Offer, n int, probe int64, oracle float64) bool {
	beat := 0
	for _, o := range offers {
		if o.CampaignID != probe && (o.Score > oracle || (o.Score == oracle && o.CampaignID < probe)) {
			beat++
		}
	}
	return beat < n
}

// fairWindow compares, over the last n eligible visits of the probe, how
// often it was shown with how often it would have been at its true
// conversion.
type fairWindow struct {
	shown, fair       []bool
	at, count         int
	shownSum, fairSum int
	shownAll, fairAll int
}

func newFairWindow(n int) *fairWindow {
	return &fairWindow{shown: make([]bool, n), fair: make([]bool, n)}
}

// add records one eligible visit and reports whether the window is full
// and the probe was shown at least 80% as often as its fair share.
func (w *fairWindow) add(shown, fair bool) bool {
	n := len(w.shown)
	if w.count == n {
		w.shownSum -= b2i(w.shown[w.at])
		w.fairSum -= b2i(w.fair[w.at])
	} else {
		w.count++
	}
	w.shown[w.at], w.fair[w.at] = shown, fair
	w.shownSum += b2i(shown)
	w.fairSum += b2i(fair)
	w.shownAll += b2i(shown)
	w.fairAll += b2i(fair)
	w.at = (w.at + 1) % n
	return w.count == n && w.fairSum > 0 && 5*w.shownSum >= 4*w.fairSum
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
