package marketsim

import (
	"math"
	"slices"

	"github.com/switchboard/switchboard/engine"
)

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
