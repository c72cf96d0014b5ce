package engine

import "math/bits"

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }

// Campaign flags kept in scratch during one match.
const (
	flagBlocked uint32 = 1 << iota // a rule already rejected the campaign
	flagDone                       // already evaluated
)

// Raised bounds a match handles itself before it gives up on the order and
// evaluates every campaign; past refreshAfter it asks for a new order.
const (
	maxPending   = 256
	refreshAfter = 32
)

// scratch is the reusable working memory of one match. Its slots carry the
// epoch of the match that wrote them, so a new match starts by incrementing
// the epoch instead of clearing anything.
type scratch struct {
	epoch uint32
	camp  []uint64    // epoch<<32 | campaign flags
	pm    [][2]uint64 // participant's codes 0..127 per question of qids
	// spans are the postings of the participant's answers that conditions name by text or by
	// a code outside 0..127: a posted condition holds when one of them lists it.
	spans   []span
	pending []int64
	top     topK     // the offers kept so far
	delta   *scratch // for a country's delta partition
}

func (sc *scratch) begin(p *partition) {
	if len(sc.camp) < len(p.camps) {
		sc.camp = make([]uint64, len(p.camps)+len(p.camps)/4)
	}
	if cap(sc.pm) < len(p.qids) {
		sc.pm = make([][2]uint64, len(p.qids))
	}
	sc.pm = sc.pm[:len(p.qids)]
	clear(sc.pm)
	sc.epoch++
	if sc.epoch == 0 { // wrapped: stale slots could look current
		clear(sc.camp)
		sc.epoch = 1
	}
}

func (sc *scratch) flags(c int32) uint32 {
	v := sc.camp[c]
	if uint32(v>>32) != sc.epoch {
		return 0
	}
	return uint32(v)
}

func (sc *scratch) setFlag(c int32, f uint32) {
	sc.camp[c] = uint64(sc.epoch)<<32 | uint64(sc.flags(c)|f)
}

// block flags campaign slot c blocked without reading its slot first (a store the core
// need not wait for: at 100k campaigns the read missed the cache for each entry of the
// participant's). Only blocking runs before evaluation starts (markEntries, the dead
// slots), so no other flag can be lost.
func (sc *scratch) block(c int32) {
	sc.camp[c] = uint64(sc.epoch)<<32 | uint64(flagBlocked)
}

// reentryBlocks reports whether an entry at `at` forbids entering again at
// now under a reentry_interval of minutes.
func reentryBlocks(minutes int32, at, now int64) bool {
	return minutes < 0 || (minutes > 0 && now-at < int64(minutes)*60)
}

// Match returns the best k campaigns the participant may enter at now (unix
// seconds), best first, appended to dst[:0]; share is the publisher's revenue
// share (0..1] and k <= 0 means all. Every rule of docs/rules.md §5 applies;
// ranking is by Offer.Score, the EPC under the greedy allocation and EPC ×
// weight × exploration bonus under the balanced one (docs/allocation.md). With cap(dst) >= k it allocates nothing once
// warm. It never blocks on snapshot rebuilds.
func (e *Engine) Match(p *Participant, share float64, now int64, k int, dst []Offer) []Offer {
	sc, _ := e.scratch.Get().(*scratch)
	if sc == nil {
		sc = new(scratch)
	}
	dst = e.snap.Load().match(sc, p, share, now, k, dst[:0])
	e.scratch.Put(sc)
	return dst
}

// evalCtx is what evaluating one campaign needs besides the campaign.
type evalCtx struct {
	sc    *scratch
	p     *Participant
	share float64
	now   int64
	day   int64
	top   *topK      // the match's best offers, shared by both partitions
	ord   *rankOrder // the partition's order: walked, and its weights rank
}

func (s *Snapshot) match(sc *scratch, p *Participant, share float64, now int64, k int, dst []Offer) []Offer {
	ctry := s.parts[p.CountryID]
	if ctry == nil {
		return dst
	}
	// Walking by bound and stopping early needs a positive share (the bound
	// scales with it) and a finite k.
	bounded := k > 0 && share > 0
	if k <= 0 {
		k = ctry.len()
	}
	day := utcDay(now)
	base := ctry.base
	sc.begin(base)
	base.markEntries(sc, p, now)
	if ctry.ndead > 0 {
		for w, bits := range ctry.dead {
			for ; bits != 0; bits &= bits - 1 {
				sc.block(int32(w*64 + trailingZeros(bits)))
			}
		}
	}
	base.compileParticipant(sc, p)
	top := &sc.top
	top.reset(k)
	arm := s.alloc.armOf(p.ID) // the split's arm: 0 without one
	bo := base.orderAt(arm).Load()
	ec := evalCtx{sc: sc, p: p, share: share, now: now, day: day, top: top, ord: bo}
	bounded = base.evaluateRaised(&ec, bounded)

	var do *rankOrder
	var dc evalCtx
	if d := ctry.delta; d != nil {
		if sc.delta == nil {
			sc.delta = new(scratch)
		}
		sd := sc.delta
		sd.begin(d)
		d.markEntries(sd, p, now)
		d.compileParticipant(sd, p)
		do = d.orderAt(arm).Load()
		dc = evalCtx{sc: sd, p: p, share: share, now: now, day: day, top: top, ord: do}
		bounded = d.evaluateRaised(&dc, bounded)
	}

	// Walk both orders merged by key.
	i, j := 0, 0
	for {
		var key float64
		fromDelta := false
		switch {
		case do != nil && j < len(do.slots) && (i >= len(bo.slots) || do.keys[j] > bo.keys[i]):
			key, fromDelta = do.keys[j], true
		case i < len(bo.slots):
			key = bo.keys[i]
		default:
			return top.appendBest(dst)
		}
		full := bounded && top.full()
		if full && top.worst() > key*share {
			break // no campaign left can beat the worst offer kept
		}
		if fromDelta {
			if c := do.slots[j]; !do.gates[j].refuses(dc.sc.pm, p.Device) && dc.sc.flags(c) == 0 && !(full && do.explorers != nil && outdrawn(do, j, p.ID, top.worst(), share)) {
				ctry.delta.evaluate(&dc, c, &do.gates[j])
			}
			j++
		} else {
			if c := bo.slots[i]; !bo.gates[i].refuses(sc.pm, p.Device) && sc.flags(c) == 0 && !(full && bo.explorers != nil && outdrawn(bo, i, p.ID, top.worst(), share)) {
				base.evaluate(&ec, c, &bo.gates[i])
			}
			i++
		}
	}
	return top.appendBest(dst)
}

// outdrawn reports whether the campaign at position i of ord, exploring,
// cannot beat the worst score kept with this participant's own exploration
// draw: its key bounds the score/share with the largest draw, so the bound
// with the participant's draw is the key scaled by (1 + x·draw) / (1 + x).
// Skipping it saves evaluating every exploring campaign whose key passes the
// walk's stop only by the bonus. It reads only ord's arrays by position,
// which the walk reads in sequence (the caller checks ord.explorers, so the
// greedy walk pays nothing).
func outdrawn(ord *rankOrder, i int, participantID int64, worst, share float64) bool {
	e := &ord.explorers[i]
	if e.x <= 0 {
		return false
	}
	return ord.keys[i]/(1+e.x)*(1+e.x*ExplorationDraw(participantID, e.id))*share < worst
}

// evaluateRaised evaluates first the campaigns whose bound rose since the
// partition's order was computed (they may sit too low in it) and marks them
// done. It returns bounded false when it cannot tell which they are: the
// caller must then walk the whole order. Dead and blocked slots are
// flagged already.
func (part *partition) evaluateRaised(ec *evalCtx, bounded bool) bool {
	ord := ec.ord
	if !bounded || part.ctr.raises.Load() == ord.seq {
		return bounded
	}
	sc := ec.sc
	ids, ok := part.ctr.raisedSince(ord.seq, maxPending, sc.pending[:0])
	sc.pending = ids[:0]
	if !ok || len(ids) > refreshAfter {
		part.refreshAsync()
	}
	if !ok {
		return false
	}
	for _, id := range ids {
		if ref, found := part.byID.get(id); found && ref.self >= 0 && sc.flags(ref.self) == 0 {
			sc.setFlag(ref.self, flagDone)
			part.evaluate(ec, ref.self, &part.gates[ref.self])
		}
	}
	return true
}

// markEntries blocks the campaigns the participant's entry history rules
// out: reentry into the same campaign and entry into a related one.
func (part *partition) markEntries(sc *scratch, p *Participant, now int64) {
	for _, e := range p.Entries {
		ref, ok := part.byID.get(e.CampaignID)
		if !ok {
			continue
		}
		if ref.self >= 0 && reentryBlocks(ref.reentry, e.At, now) {
			sc.block(ref.self)
		}
		for _, c := range part.blocks[ref.b0:ref.b1] {
			sc.block(c)
		}
	}
}

// compileParticipant turns the participant's answers into code masks per
// question and keeps the postings of its texts (and codes outside the mask
// range), which evaluation searches for the few posted conditions it meets:
// marking every condition a posting names wrote, at 100k campaigns, a few
// hundred scattered words per match for the ZIP alone.
func (part *partition) compileParticipant(sc *scratch, p *Participant) {
	sc.spans = sc.spans[:0]
	part.compileAnswers(sc.pm, p, func(sp span) { sc.spans = append(sc.spans, sp) })
}

// compileAnswers sets in pm the participant's codes 0..127 per question slot
// and calls hit with the postings span of each of its other codes and texts
// that some condition names.
func (part *partition) compileAnswers(pm [][2]uint64, p *Participant, hit func(span)) {
	for i := range p.Answers {
		a := &p.Answers[i]
		qs := part.qslot(a.QuestionID)
		if qs < 0 {
			continue // no condition asks this question
		}
		for _, code := range a.Codes {
			if uint32(code) < maskCodes {
				pm[qs][code>>6] |= 1 << (code & 63)
			} else if i := part.codes.get(codeKey(a.QuestionID, code)); i >= 0 {
				hit(part.spans[i])
			}
		}
		if a.Text == "" {
			continue
		}
		if k, short := shortKey(part.textQ(a.QuestionID), a.Text); short {
			if i := part.shorts.get(k); i >= 0 {
				hit(part.spans[i])
			}
		} else if sp, ok := part.texts[textKey{a.QuestionID, a.Text}]; ok {
			hit(sp)
		}
	}
}

// posted reports whether one of the participant's postings (sc.spans) lists
// condition c. A posting lists its conditions in ascending order.
func (part *partition) posted(sc *scratch, c uint32) bool {
	for _, sp := range sc.spans {
		ps := part.posts[sp.off : sp.off+sp.n]
		lo, hi := 0, len(ps)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if ps[m] < c {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(ps) && ps[lo] == c {
			return true
		}
	}
	return false
}

// condsMatch reports whether the participant meets conditions conds[c0:c0+n],
// every condition of one quota (a quota without conditions matches everyone).
func (part *partition) condsMatch(sc *scratch, c0, n uint32) bool {
	for c := c0; c < c0+n; c++ {
		cm := &part.conds[c]
		pm := &sc.pm[cm.qs]
		if pm[0]&cm.mask[0]|pm[1]&cm.mask[1] == 0 && !(cm.posted && part.posted(sc, c)) {
			return false
		}
	}
	return true
}

// evaluate applies every rule to campaign slot c, whose gate is g, and keeps
// its offer among the match's best (ec.top) when it is eligible and good
// enough. A slot's non-global quotas' conditions lie in quota order from g.c0.
func (part *partition) evaluate(ec *evalCtx, c int32, g *gate) {
	cm := &part.camps[c]
	p := ec.p
	if cm.devices != 0 && cm.devices&p.Device == 0 {
		return
	}
	// Under bidprice every open quota the participant matches is read: the
	// offer is scored by the best weight among them.
	open, qw, best := false, ec.ord.qw, 0.0
	q, cond := g.q0, g.c0
	for ; q < cm.g0; q++ {
		qm := &part.quotas[q]
		if part.condsMatch(ec.sc, cond, qm.nc) && !qm.counter.full(qm.num, qm.clickBalanced) {
			open = true
			if qw == nil {
				break
			}
			best = max(best, qw[q])
		}
		cond += qm.nc
	}
	if !open {
		return
	}
	for q := cm.g0; q < cm.q1; q++ {
		qm := &part.quotas[q]
		if part.condsMatch(ec.sc, qm.c0, qm.nc) && qm.counter.full(qm.num, qm.clickBalanced) {
			return
		}
	}
	if cm.maxDaily > 0 && cm.counter.dailyOn(ec.day) >= int64(cm.maxDaily) {
		return
	}
	cold := &part.cold[c]
	if cm.restricted && !cold.restriction.admits(p, ec.now) {
		return
	}
	conv := Conversion(int(cm.inc), cm.counter.sessions.Load(), cm.counter.completes.Load())
	epc := float64(cm.cpi) / 100 * ec.share * conv
	score := epc * best
	if qw == nil {
		score = ec.ord.score(epc, c, p.ID, cold.id)
	}
	if !ec.top.admits(score, cold.id) {
		return
	}
	ec.top.push(&Offer{
		CampaignID: cold.id, BuyerID: cold.buyer, CPICents: cm.cpi,
		LOI: int(cold.loi), Incidence: int(cm.inc),
		Conversion: conv,
		EPC:        epc,
		Score:      score,
	})
}
