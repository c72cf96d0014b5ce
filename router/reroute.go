package router

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/router/supplierlink"
)

// Re-routing of screen-outs (docs/rules.md §10), for publishers with reroute_attempts > 0;
// with 0 nothing here runs. An offer entry of such a publisher starts a chain (its session
// is hop 1). A disqualified or over_quota callback of a chain's session, while the chain has
// attempts left and is younger than persistence.ChainMaxAge, answers a 302 to the supplier
// link of a new session (the next hop) instead of the partner redirect: the survey is the
// best of the offers' ranking (engine.Match) for the participant now, among campaigns the
// chain has not tried, admitted by the same arbiter as any entry in the same transaction as
// the outcome (persistence.ContinueChain). An offer entry refused because the campaign
// filled meanwhile is re-routed the same way (a new chain, one attempt used). When the chain
// ends the partner gets one redirect and one postback, of its last session, with attempts =
// the number of its sessions.

// maxRerouteCandidates bounds how many surveys one hop tries in its transaction: each is
// eligible by the engine's mirror, so a refusal by the database is rare.
const maxRerouteCandidates = 3

// rerouteCandidate is a survey a chain may continue to: the entry to admit and its route.
type rerouteCandidate struct {
	entry persistence.Entry
	route persistence.CampaignRoute
}

// rerouteCandidates are the best surveys (the offers' ranking, engine.Match) participant p
// may enter now, except the tried ones and those with a hosted pre-screener (whose page
// cannot be skipped), as entries of the chain link.
func (r *Router) rerouteCandidates(ctx context.Context, p *engine.Participant, pub persistence.Publisher, tried []int64,
	now time.Time, link persistence.ChainLink) []rerouteCandidate {
	var out []rerouteCandidate
	for _, o := range r.eng.Match(p, pub.RevenueShare, now.Unix(), 0, nil) {
		if slices.Contains(tried, o.CampaignID) {
			continue
		}
		if scr, err := r.screener(ctx, o.CampaignID); err != nil || scr != nil {
			continue
		}
		quotas, ok := r.eng.Eligible(p, o.CampaignID, now.Unix(), nil)
		if !ok {
			continue
		}
		route, err := r.route(ctx, o.CampaignID)
		if err != nil {
			continue
		}
		l := link
		out = append(out, rerouteCandidate{route: route, entry: persistence.Entry{TID: newTID(), CampaignID: o.CampaignID,
			PublisherID: pub.ID, ParticipantID: p.ID, DeviceID: link.DeviceID, QuotaIDs: quotas,
			RespondentID: newRespondentID(), Chain: &l}})
		if len(out) == maxRerouteCandidates {
			break
		}
	}
	return out
}

// entered is the bookkeeping of an admitted entry: counters, panel and notifications.
func (r *Router) entered(campaignID, participantID int64, a persistence.Admission) {
	r.verdicts.admitted.Add(1)
	at := a.EnteredAt.Unix()
	r.eng.Counters().RecordEntry(campaignID, a.QuotaIDs)
	r.panel.RecordEntry(participantID, campaignID, at)
	r.notify.entry(participantID, campaignID, at)
	r.notify.quotaCounts(campaignID) // an entry moves no campaign count (today's completes, outcomes)
}

// supplierLocation is the supplier link of an admitted session of route.
func (r *Router) supplierLocation(ctx context.Context, route persistence.CampaignRoute, p *engine.Participant, tid, respondentID string) (string, error) {
	retarget, err := r.retargetID(ctx, route, p)
	if err != nil {
		return "", err
	}
	return supplierlink.Build(route.SupplierLink, supplierlink.Values{TID: tid, RespondentID: respondentID,
		RetargetID: retarget, Answers: p.Answers}, route.BuyerSecret), nil
}

// rerouteRefused re-routes an offer entry of claims that was refused (its survey filled
// meanwhile) to the best other survey: a new chain whose hop 1 is that survey, one attempt
// used. It returns "" when no other survey admits the participant.
func (r *Router) rerouteRefused(ctx context.Context, claims *entrytoken.Claims, pub persistence.Publisher, p *engine.Participant, now time.Time) (string, error) {
	link := persistence.ChainLink{Hop: 1, DeviceType: int(claims.DeviceType), DeviceID: claims.DeviceID, Reroutes: 1}
	tried := []int64{claims.CampaignID}
	for _, c := range r.rerouteCandidates(ctx, p, pub, tried, now, link) {
		tried = append(tried, c.entry.CampaignID)
		c.entry.Chain.Tried = slices.Clone(tried)
		c.entry.OfferNonce = int64(claims.Nonce) // the offer's link followed again resumes this hop
		a, err := r.admit(ctx, c.entry)
		if err != nil {
			return "", err
		}
		if a.Refused != "" {
			r.verdicts.refused(refusedByDatabase, a.Refused)
			r.notify.counts(c.entry.CampaignID)
			continue
		}
		if a.Resumed {
			r.verdicts.resumed.Add(1)
		} else {
			r.entered(c.entry.CampaignID, p.ID, a)
			r.reroutes.started(pub.ID)
			r.reroutes.hop(pub.ID)
		}
		return r.supplierLocation(ctx, c.route, p, a.TID, a.RespondentID)
	}
	return "", nil
}

// enteredBefore reports whether p has entered campaign id: an offer clicked again after its
// session (a refusal by reentry_interval) is not a survey that filled meanwhile, and is not
// re-routed.
func enteredBefore(p *engine.Participant, id int64) bool {
	_, found := slices.BinarySearchFunc(p.Entries, id, func(e engine.Entry, id int64) int { return cmp.Compare(e.CampaignID, id) })
	return found
}

// chainParticipant is the chain's participant with the device of its offer.
func (r *Router) chainParticipant(ctx context.Context, ch *persistence.Chain) (engine.Participant, error) {
	var p engine.Participant // its own buffers: the chain's callback keeps it throughout
	if err := r.participant(ctx, ch.ParticipantID, &p); err != nil {
		return engine.Participant{}, err
	}
	p.Device = engine.DeviceFromSupply(ch.DeviceType)
	if ch.DeviceID != "" && ch.DeviceID != p.DeviceID {
		p.DeviceID, p.DeviceIDHash = ch.DeviceID, engine.HashDeviceID(ch.DeviceID)
	}
	return p, nil
}

// chainCallback decides the first callback of a chain's session s (docs/rules.md §10): the
// chain continues to the next hop's supplier link, or ends with the partner redirect of
// this, its last, session; a repeat answers as the first did.
func (r *Router) chainCallback(ctx context.Context, pub persistence.Publisher, s persistence.Session, named string, now time.Time) (string, string, error) {
	if s.Outcome != "" {
		return r.chainRepeat(ctx, pub, s, named)
	}
	if s.Closed() {
		return "", "", errClosed
	}
	ch, err := r.sessions.ChainByID(ctx, s.ChainID)
	if err != nil {
		return "", "", err
	}
	reason := ""
	switch {
	case named == outcome.Complete:
		reason = persistence.ChainEndComplete
	case named == outcome.QualityTerm:
		reason = persistence.ChainEndQualityTerm
	case ch.Reroutes >= pub.RerouteAttempts:
		reason = persistence.ChainEndExhausted
	case now.Sub(ch.StartedAt) >= persistence.ChainMaxAge:
		reason = persistence.ChainEndExpired
	}
	var p engine.Participant
	var cands []rerouteCandidate
	if reason == "" {
		p, err = r.chainParticipant(ctx, &ch)
		if err != nil && !isNotFound(err) {
			return "", "", err
		}
		if err == nil {
			cands = r.rerouteCandidates(ctx, &p, pub, ch.Tried, now, persistence.ChainLink{ID: ch.ID, Hop: s.ChainHop + 1, DeviceID: ch.DeviceID})
		}
		if len(cands) == 0 {
			reason = persistence.ChainEndNoSurvey
		}
	}
	// The chain's one postback, stored only if the chain ends with this outcome.
	pay, rec, err := r.outcomeRecord(pub, s, named, now, s.ChainHop)
	if err != nil {
		return "", "", err
	}
	entries := make([]persistence.Entry, len(cands))
	for i := range cands {
		entries[i] = cands[i].entry
	}
	res, err := r.sessions.ContinueChain(ctx, persistence.ChainStep{Session: s, Outcome: rec, Candidates: entries, EndReason: reason})
	if err != nil {
		return "", "", err
	}
	if !res.Decided {
		if res.Stored.Outcome == "" {
			return "", "", errClosed // reconciled since it was read
		}
		return r.chainRepeat(ctx, pub, res.Stored, named)
	}
	r.outcomeStored(ctx, s, named, res.OutcomeResult, now)
	for i, reason := range res.Refused {
		r.verdicts.refused(refusedByDatabase, reason)
		r.notify.counts(cands[i].entry.CampaignID) // the engine's mirror was behind
	}
	if res.Next >= 0 {
		next := cands[res.Next]
		r.entered(next.entry.CampaignID, p.ID, res.Admission)
		r.reroutes.hop(pub.ID)
		loc, err := r.supplierLocation(ctx, next.route, &p, res.Admission.TID, res.Admission.RespondentID)
		return loc, "", err
	}
	r.reroutes.ended(pub.ID, res.EndReason, named == outcome.Complete && s.ChainHop >= 2)
	return payout.RedirectURL(pub, payout.Fields{TID: s.TID, Status: named, Reward: pay.Reward, Attempts: s.ChainHop}), "", nil
}

// chainRepeat answers a callback of a chain's session that has its outcome: the same answer
// as the first (the same next hop's supplier link, or the chain's partner redirect), 409 for
// another outcome. It never admits a session.
func (r *Router) chainRepeat(ctx context.Context, pub persistence.Publisher, s persistence.Session, named string) (string, string, error) {
	if s.Outcome != named || s.Rejected {
		return r.repeat(pub, s, named)
	}
	next, found, err := r.sessions.ChainHopByNumber(ctx, s.ChainID, s.ChainHop+1)
	if err != nil {
		return "", "", err
	}
	if !found {
		return payout.RedirectURL(pub, payout.Fields{TID: s.TID, Status: s.Outcome, Reward: s.Reward, Attempts: s.ChainHop}), "", nil
	}
	route, err := r.route(ctx, next.CampaignID)
	if err != nil {
		return "", "", err
	}
	ch, err := r.sessions.ChainByID(ctx, s.ChainID)
	if err != nil {
		return "", "", err
	}
	p, err := r.chainParticipant(ctx, &ch)
	if err != nil {
		return "", "", err
	}
	loc, err := r.supplierLocation(ctx, route, &p, next.TID, next.RespondentID)
	return loc, "", err
}

// rerouteCounts counts chains per publisher for /metrics.
type rerouteCounts struct {
	mu   sync.Mutex
	pubs map[int64]*publisherChains
}

// publisherChains are one publisher's chain counters.
type publisherChains struct {
	started, hops, rescued uint64
	ended                  [len(chainEndReasons)]uint64
}

// chainEndReasons are the reasons a chain ends, in the order of publisherChains.ended.
var chainEndReasons = [...]string{persistence.ChainEndComplete, persistence.ChainEndQualityTerm,
	persistence.ChainEndExhausted, persistence.ChainEndExpired, persistence.ChainEndNoSurvey}

func (c *rerouteCounts) of(pub int64) *publisherChains {
	if c.pubs == nil {
		c.pubs = map[int64]*publisherChains{}
	}
	p := c.pubs[pub]
	if p == nil {
		p = &publisherChains{}
		c.pubs[pub] = p
	}
	return p
}

func (c *rerouteCounts) started(pub int64) {
	c.mu.Lock()
	c.of(pub).started++
	c.mu.Unlock()
}

func (c *rerouteCounts) hop(pub int64) {
	c.mu.Lock()
	c.of(pub).hops++
	c.mu.Unlock()
}

func (c *rerouteCounts) ended(pub int64, reason string, rescued bool) {
	c.mu.Lock()
	p := c.of(pub)
	if i := slices.Index(chainEndReasons[:], reason); i >= 0 {
		p.ended[i]++
	}
	if rescued {
		p.rescued++
	}
	c.mu.Unlock()
}

// samples returns one sample per publisher of what pick reads.
func (c *rerouteCounts) samples(pick func(*publisherChains) []httpio.Sample) []httpio.Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int64, 0, len(c.pubs))
	for id := range c.pubs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []httpio.Sample
	for _, id := range ids {
		label := `publisher="` + strconv.FormatInt(id, 10) + `"`
		for _, s := range pick(c.pubs[id]) {
			if s.Labels == "" {
				s.Labels = label
			} else {
				s.Labels = label + "," + s.Labels
			}
			out = append(out, s)
		}
	}
	return out
}

// registerRerouteMetrics exposes this process's re-routing counts per publisher.
func (r *Router) registerRerouteMetrics(m *httpio.Metrics) {
	c := &r.reroutes
	m.Gauge("switchboard_reroute_chains_started_total", "counter",
		"Re-routing chains this process started, per publisher (docs/rules.md §10).",
		func() []httpio.Sample {
			return c.samples(func(p *publisherChains) []httpio.Sample { return []httpio.Sample{{Value: float64(p.started)}} })
		})
	m.Gauge("switchboard_reroute_hops_total", "counter",
		"Sessions this process admitted by re-routing a screen-out or a refused entry to another survey, per publisher.",
		func() []httpio.Sample {
			return c.samples(func(p *publisherChains) []httpio.Sample { return []httpio.Sample{{Value: float64(p.hops)}} })
		})
	m.Gauge("switchboard_reroute_chains_ended_total", "counter",
		"Re-routing chains this process ended, per publisher and reason (complete, quality_term, exhausted, expired, no_survey).",
		func() []httpio.Sample {
			return c.samples(func(p *publisherChains) []httpio.Sample {
				out := make([]httpio.Sample, len(chainEndReasons))
				for i, reason := range chainEndReasons {
					out[i] = httpio.Sample{Labels: `reason="` + reason + `"`, Value: float64(p.ended[i])}
				}
				return out
			})
		})
	m.Gauge("switchboard_reroute_rescued_completes_total", "counter",
		"Completes at hop 2 or later of a re-routing chain (a screen-out re-routing rescued), per publisher.",
		func() []httpio.Sample {
			return c.samples(func(p *publisherChains) []httpio.Sample { return []httpio.Sample{{Value: float64(p.rescued)}} })
		})
}
