package engine

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// yieldEvery is how many campaigns a build goes through between two calls of its yield: a
// few milliseconds of work at 100k campaigns.
const yieldEvery = 256

// buildPartition indexes the given active campaigns of one country, taking
// counter pointers from ctr, calling yield (when not nil) between steps.
func buildPartition(defs []*Campaign, ctr *Counters, alloc *allocator, yield func()) *partition {
	seq := ctr.raises.Load() // before reading any bound
	kc := ctr.campaignsOf(defs)
	qctr := ctr.quotasOf(defs)
	// The working arrays are made here, not in the steps, so that a small
	// delta's stay on the stack.
	n := len(defs)
	keys, perm := make([]float64, n), make([]int32, n)
	var ws, xs []float64
	if alloc.weighted() {
		ws, xs = make([]float64, n), make([]float64, n)
		weighCampaigns(ws, xs, defs, alloc, kc, qctr)
	}
	boundOrder(keys, perm, defs, ctr, kc, ws, xs)
	p, np := newPartition(defs, ctr, alloc)
	ord := newRankOrder(seq, perm, keys, ws, xs)
	var pb postBuilder
	pb.reserve(np)
	for slot, ci := range perm {
		p.fill(slot, defs[ci], kc[ci], qctr[ci], &pb)
		if yield != nil && slot%yieldEvery == yieldEvery-1 {
			yield()
		}
	}
	p.codes, p.shorts, p.texts, p.spans, p.posts = pb.layout()
	if yield != nil {
		yield()
	}
	if alloc != nil {
		ord.qw = p.quotaWeights(alloc, alloc.state.Load())
	}
	p.indexRelations()
	p.placeGates()
	if yield != nil {
		yield()
	}
	ord.place(p)
	p.ord.Store(ord)
	if n := alloc.arms(); n > 1 {
		// The other arms of a split: one order each, over the slots laid
		// out in the first arm's order.
		p.alts = make([]atomic.Pointer[rankOrder], n-1)
		for i := 1; i < n; i++ {
			p.alts[i-1].Store(p.armOrder(seq, alloc.arm(i)))
		}
	}
	return p
}

// weighCampaigns sets ws[i] and xs[i] to the weight and exploration cap of
// campaign defs[i] under a weighted allocation: the keys then carry the
// weights (see rankOrder), so that slots are laid out in the order matching
// walks.
func weighCampaigns(ws, xs []float64, defs []*Campaign, alloc *allocator, kc []*campaignCounter, qctr [][]*quotaCounter) {
	st := alloc.state.Load()
	var open []quotaMeta
	for i, c := range defs {
		open = open[:0]
		for j := range c.Quotas {
			if q := &c.Quotas[j]; !q.Global {
				open = append(open, quotaMeta{counter: qctr[i][j], num: int64(q.NumRespondents), clickBalanced: q.ClickBalanced})
			}
		}
		ws[i], xs[i] = alloc.weigh(st, c, kc[i], open)
	}
}

// boundOrder tightens every campaign's conversion bound, sets keys[i] to
// campaign defs[i]'s rank key and perm to the campaigns by descending key:
// slots in bound order, which matching walks (nearly) sequentially.
func boundOrder(keys []float64, perm []int32, defs []*Campaign, ctr *Counters, kc []*campaignCounter, ws, xs []float64) {
	for i, c := range defs {
		kc[i].tighten(ctr)
		keys[i] = weighted(boundKey(c.CPICents, int32(c.Incidence), kc[i]), ws, xs, i)
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(x, y int32) int { return cmp.Compare(keys[y], keys[x]) })
}

// newPartition returns an empty partition sized for the campaigns, quotas
// and conditions of defs, with the questions they condition on, and the
// number of postings their conditions will make.
func newPartition(defs []*Campaign, ctr *Counters, alloc *allocator) (*partition, int) {
	nq, nc, np := 0, 0, 0
	qset := make(map[int32]struct{})
	for _, c := range defs {
		nq += len(c.Quotas)
		for i := range c.Quotas {
			nc += len(c.Quotas[i].Conditions)
			for j := range c.Quotas[i].Conditions {
				cond := &c.Quotas[i].Conditions[j]
				qset[cond.QuestionID] = struct{}{}
				np += len(cond.Codes) + cond.textCount()
			}
		}
	}
	p := &partition{
		ctr:    ctr,
		alloc:  alloc,
		camps:  make([]campMeta, len(defs)),
		cold:   make([]campCold, len(defs)),
		quotas: make([]quotaMeta, 0, nq),
		qdefs:  make([]*Quota, 0, nq),
		conds:  make([]condMeta, 0, nc),
	}
	for q := range qset {
		p.qids = append(p.qids, q)
	}
	slices.Sort(p.qids)
	return p, np
}

// newRankOrder returns the order of a new partition's slots, slot i holding
// campaign perm[i] with its key and weights (ws, xs nil under greedy).
func newRankOrder(seq uint64, perm []int32, keys, ws, xs []float64) *rankOrder {
	n := len(perm)
	ord := &rankOrder{seq: seq, slots: make([]int32, n), keys: make([]float64, n)}
	if ws != nil {
		ord.w, ord.x = make([]float64, n), make([]float64, n)
	}
	for slot, ci := range perm {
		ord.slots[slot] = int32(slot)
		ord.keys[slot] = keys[ci]
		if ws != nil {
			ord.w[slot], ord.x[slot] = ws[ci], xs[ci]
		}
	}
	return ord
}

// fill lays campaign c out in slot: its hot and cold records, then its
// quotas, non-global first, with their conditions compiled.
func (p *partition) fill(slot int, c *Campaign, k *campaignCounter, qc []*quotaCounter, pb *postBuilder) {
	r := newRestrictions(c)
	p.cold[slot] = campCold{
		id: c.ID, buyer: c.BuyerID, loi: int32(c.LOI), reentry: int32(c.ReentryMinutes),
		restriction: r, def: c,
	}
	m := &p.camps[slot]
	*m = campMeta{
		cpi: c.CPICents, counter: k, maxDaily: int32(c.MaxDailyCompletes),
		inc: int32(c.Incidence), devices: c.Devices, restricted: r != nil,
	}
	m.q0 = int32(len(p.quotas))
	p.addQuotas(c, qc, false, pb)
	m.g0 = int32(len(p.quotas))
	p.addQuotas(c, qc, true, pb)
	m.q1 = int32(len(p.quotas))
}

// addQuotas appends c's global or non-global quotas, in their order, with
// their conditions compiled.
func (p *partition) addQuotas(c *Campaign, qc []*quotaCounter, global bool, pb *postBuilder) {
	for qi := range c.Quotas {
		q := &c.Quotas[qi]
		if q.Global != global {
			continue
		}
		p.quotas = append(p.quotas, quotaMeta{
			counter: qc[qi], num: int64(q.NumRespondents),
			c0: uint32(len(p.conds)), nc: uint32(len(q.Conditions)),
			clickBalanced: q.ClickBalanced, global: q.Global,
		})
		p.qdefs = append(p.qdefs, q)
		for j := range q.Conditions {
			p.conds = append(p.conds, p.compile(pb, &q.Conditions[j], uint32(len(p.conds))))
		}
	}
}

// compile turns a condition into its mask and postings.
func (p *partition) compile(pb *postBuilder, c *Condition, idx uint32) condMeta {
	qs, _ := slices.BinarySearch(p.qids, c.QuestionID)
	m := condMeta{qs: uint32(qs)}
	for _, code := range c.Codes {
		if uint32(code) < maskCodes {
			m.mask[code>>6] |= 1 << (code & 63)
		} else {
			m.posted = true
			pb.addCode(codeKey(c.QuestionID, code), idx)
		}
	}
	if c.hasTexts() {
		m.posted = true
		qnum := p.numberTextQ(c.QuestionID)
		for t := range c.textValues() {
			t = NormalizeText(t)
			if k, ok := shortKey(qnum, t); ok {
				pb.addShort(k, idx)
			} else {
				pb.addText(textKey{c.QuestionID, t}, idx)
			}
		}
	}
	return m
}

// numberTextQ returns the number of text question q, numbering it when new
// (0 once maxTextQs questions are numbered: its texts use the string map).
func (p *partition) numberTextQ(q int32) int {
	if n := p.textQ(q); n != 0 || len(p.textQs) == maxTextQs {
		return n
	}
	p.textQs = append(p.textQs, q)
	return len(p.textQs)
}
