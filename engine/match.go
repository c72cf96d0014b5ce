package engine

// Campaign flags kept in scratch during one match.
const (
	flagBlocked uint32 = 1 << iota // a rule already rejected the campaign
	flagCand                       // an open non-global quota matched
)

// scratch is the reusable working memory of one match. Its slots carry the
// epoch of the match that wrote them in their high 32 bits, so a new match
// starts by incrementing the epoch instead of clearing anything.
type scratch struct {
	epoch   uint32
	quota   []uint64 // epoch<<32 | condition bits seen
	camp    []uint64 // epoch<<32 | campaign flags
	matched []int32  // quota slots whose conditions all matched
	cands   []int32  // campaign slots with an open matching non-global quota
}

func (sc *scratch) begin(p *partition) {
	if len(sc.quota) < len(p.quotas) {
		sc.quota = make([]uint64, len(p.quotas)+len(p.quotas)/4)
	}
	if len(sc.camp) < len(p.camps) {
		sc.camp = make([]uint64, len(p.camps)+len(p.camps)/4)
	}
	sc.epoch++
	if sc.epoch == 0 { // wrapped: stale slots could look current
		clear(sc.quota)
		clear(sc.camp)
		sc.epoch = 1
	}
	sc.matched = sc.matched[:0]
	sc.cands = sc.cands[:0]
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

func (sc *scratch) mask(q int32) uint32 {
	v := sc.quota[q]
	if uint32(v>>32) != sc.epoch {
		return 0
	}
	return uint32(v)
}

// hit ORs the condition bits of a posting list into the quota masks and
// records each quota whose mask becomes complete.
func (sc *scratch) hit(posts []uint32) {
	ep := uint64(sc.epoch) << 32
	for _, post := range posts {
		q := postSlot(post)
		v := sc.quota[q]
		if v&^0xffffffff != ep {
			v = ep
		}
		nv := v | uint64(postBit(post))
		if nv == v {
			continue
		}
		sc.quota[q] = nv
		if uint32(nv) == postFull(post) {
			sc.matched = append(sc.matched, int32(q))
		}
	}
}

// reentryBlocks reports whether an entry at `at` forbids entering again at
// now under a reentry_interval of minutes.
func reentryBlocks(minutes int32, at, now int64) bool {
	return minutes < 0 || (minutes > 0 && now-at < int64(minutes)*60)
}

// Match returns the best k campaigns the participant may enter at now (unix
// seconds), best first, appended to dst[:0]; share is the publisher's revenue
// share (0..1] and k <= 0 means all. Every rule of CONTRACT §5 applies;
// ranking is by EPC (see Offer). With cap(dst) >= k it allocates nothing once
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

func (s *Snapshot) match(sc *scratch, p *Participant, share float64, now int64, k int, dst []Offer) []Offer {
	part := s.parts[p.CountryID]
	if part == nil {
		return dst
	}
	sc.begin(part)
	part.markEntries(sc, p, now)
	part.scanAnswers(sc, p)

	for _, q := range sc.matched {
		if !part.quotas[q].global {
			part.consider(sc, q, p)
		}
	}
	for _, q := range part.always {
		part.consider(sc, q, p)
	}
	for _, q := range part.wide {
		if quotaMatches(part.quotas[q].def, p) {
			part.consider(sc, q, p)
		}
	}

	if k <= 0 {
		k = len(sc.cands)
	}
	day := utcDay(now)
	for _, c := range sc.cands {
		cm := &part.camps[c]
		if len(dst) == k && float64(cm.cpiCents)/100*share < dst[0].EPC {
			continue // even a certain complete would not beat the worst kept offer
		}
		if cm.maxDaily > 0 && cm.counter.dailyOn(day) >= int64(cm.maxDaily) {
			continue
		}
		if cm.restriction != nil && !cm.restriction.admits(p, now) {
			continue
		}
		if part.globalFull(sc, cm, p) {
			continue
		}
		dst = pushTop(dst, k, cm.offer(share))
	}
	sortTop(dst)
	return dst
}

// markEntries blocks the campaigns the participant's entry history rules
// out: reentry into the same campaign and entry into a related one.
func (part *partition) markEntries(sc *scratch, p *Participant, now int64) {
	for _, e := range p.Entries {
		ref, ok := part.byID[e.CampaignID]
		if !ok {
			continue
		}
		if ref.self >= 0 && reentryBlocks(part.camps[ref.self].reentry, e.At, now) {
			sc.setFlag(ref.self, flagBlocked)
		}
		for _, c := range part.blocks[ref.b0:ref.b1] {
			sc.setFlag(c, flagBlocked)
		}
	}
}

// scanAnswers walks only the participant's own answers through the postings.
func (part *partition) scanAnswers(sc *scratch, p *Participant) {
	for i := range p.Answers {
		a := &p.Answers[i]
		for _, code := range a.Codes {
			if sp, ok := part.codes[codeKey(a.QuestionID, code)]; ok {
				sc.hit(part.posts[sp.off : sp.off+sp.n])
			}
		}
		if a.Text == "" {
			continue
		}
		var sp span
		var ok bool
		if k, short := shortKey(part.textQ(a.QuestionID), a.Text); short {
			sp, ok = part.shorts[k]
		} else {
			sp, ok = part.texts[textKey{a.QuestionID, a.Text}]
		}
		if ok {
			sc.hit(part.posts[sp.off : sp.off+sp.n])
		}
	}
}

// consider takes a matching non-global quota: its campaign becomes a
// candidate when the device fits and the quota is open.
func (part *partition) consider(sc *scratch, q int32, p *Participant) {
	qm := &part.quotas[q]
	if sc.flags(qm.camp) != 0 {
		return // already a candidate, or rejected
	}
	cm := &part.camps[qm.camp]
	if cm.devices != 0 && cm.devices&p.Device == 0 {
		sc.setFlag(qm.camp, flagBlocked)
		return
	}
	if qm.counter.full(qm.num, qm.clickBalanced) {
		return
	}
	sc.setFlag(qm.camp, flagCand)
	sc.cands = append(sc.cands, qm.camp)
}

// globalFull reports whether the participant matches a full global quota of
// the campaign. A global quota without conditions matches everyone.
func (part *partition) globalFull(sc *scratch, cm *campMeta, p *Participant) bool {
	for q := cm.g0; q < cm.q1; q++ {
		qm := &part.quotas[q]
		var matches bool
		switch {
		case qm.wide:
			matches = quotaMatches(qm.def, p)
		case qm.full == 0:
			matches = true
		default:
			matches = sc.mask(q) == qm.full
		}
		if matches && qm.counter.full(qm.num, qm.clickBalanced) {
			return true
		}
	}
	return false
}
