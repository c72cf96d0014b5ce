package marketsim

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

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
	s, err := newSim(cfg, r, start)
	if err != nil {
		return Result{}, err
	}
	s.play(start, stop)
	s.tally()
	return s.res, nil
}

// newSim builds the market of cfg (with r) as it stands at start: the campaigns in field
// loaded into the engine with the completes they had, the panel with a month of visits.
func newSim(cfg Config, r *rand.Rand, start int64) (*sim, error) {
	ps := newParticipants(&cfg, r)
	cs := newMarket(&cfg, r, ps, start)
	s := &sim{cfg: cfg, e: engine.New(nil), panel: engine.NewPanel(), ps: ps, cs: cs,
		entries: make(map[[2]int64]uint64), fair: newFairWindow(cfg.FairWindow), shown: len(cfg.PositionBias), start: start}
	s.probe = &cs[len(cs)-1]
	s.res = Result{Allocation: cfg.Allocation, Reroute: cfg.RerouteAttempts, Seed: cfg.Seed, Campaigns: len(cs) - 1,
		ProbeSessions: -1, ProbeHours: -1, ProbeFairSessions: -1}
	s.loadMarket(start)
	if err := s.loadPanel(r, start); err != nil {
		return nil, err
	}
	s.e.SetAllocation(cfg.Allocation, s.panel)
	return s, nil
}

// loadMarket loads the campaigns in field at start into the engine, with the completes
// (and the entries and sessions they took) each had before.
func (s *sim) loadMarket(start int64) {
	cs := s.cs
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
}

// loadPanel gives each participant a month of history at its own rate (drawn with r), so
// that supply estimates see it.
func (s *sim) loadPanel(r *rand.Rand, start int64) error {
	ps := s.ps
	for i := range ps {
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
				return err
			}
			known = true
		}
	}
	return nil
}

// play runs the market hour by hour from start to stop: campaigns arrive, the weights are
// refreshed, participants visit in their partners' waves, sessions end, campaigns leave.
func (s *sim) play(start, stop int64) {
	// Visits draw from their own stream, so every policy sees the same ones.
	ra := rand.New(rand.NewPCG(uint64(s.cfg.Seed), 0xa1))
	waves := make([]float64, len(s.cfg.PartnerShares))
	lastRefresh := int64(math.MinInt64 / 2)
	visits := uint64(0)
	for now := start; now < stop; now += 3600 {
		s.arrive(now, start)
		if now-lastRefresh >= s.cfg.RefreshEvery {
			s.e.RefreshAllocation(now)
			lastRefresh = now
		}
		s.setWaves(waves, now)
		for i := range s.ps {
			if ra.Float64() >= s.ps[i].rate/24*waves[s.ps[i].partner] {
				continue
			}
			visits++
			s.push(&event{at: now + ra.Int64N(3600), kind: evVisit, ch: &chain{pi: i, visit: visits}})
		}
		for s.queue.Len() > 0 && s.queue[0].at < now+3600 {
			s.handle(heap.Pop(&s.queue).(*event))
		}
		s.leave(now)
	}
}

// arrive adds the campaigns that enter the market at now (after start) to the engine.
func (s *sim) arrive(now, start int64) {
	var arriving []engine.Campaign
	for i := range s.cs {
		if s.cs[i].arrive == now && now > start {
			arriving = append(arriving, s.cs[i].def)
		}
	}
	if len(arriving) > 0 {
		s.e.Apply(arriving, nil)
	}
}

// setWaves sets each partner's visit factor for the hour at now.
func (s *sim) setWaves(waves []float64, now int64) {
	np := len(s.cfg.PartnerShares)
	hour := float64((now % 86400) / 3600)
	for j := range waves {
		peak := 8 + 16*float64(j)/float64(np)
		waves[j] = 1 + s.cfg.WaveAmplitude*math.Cos(2*math.Pi*(hour-peak)/24)
	}
}

// leave closes the campaigns whose field period ends within the hour at now: they leave
// the market.
func (s *sim) leave(now int64) {
	var gone []int64
	for i := range s.cs {
		c := &s.cs[i]
		if !c.ended && c.end <= now+3600 && c.arrive <= now {
			s.close(c)
			gone = append(gone, c.def.ID)
		}
	}
	if len(gone) > 0 {
		s.e.Apply(nil, gone)
	}
}

// tally counts, of the campaigns that ended within the run (the probe left out), those and
// the quotas filled by their deadline, and the probe's figures over the run.
func (s *sim) tally() {
	cs := s.cs
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
