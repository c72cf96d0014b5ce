package engine

import (
	"sync"
	"sync/atomic"
)

// allocator is the engine-wide state of the allocation policy: the policy,
// the panel it estimates supply from, and the latest estimate.
type allocator struct {
	policy Allocation
	panel  *Panel
	state  atomic.Pointer[allocState]
	// bids is what the bid-price policy carries from one refresh to the
	// next; bidsMu serializes the refreshes that use it.
	bidsMu sync.Mutex
	bids   bidPrices
	// split divides the participants among arms when it has more than
	// one (--allocation-split): arm 0 ranks by this allocator's policy and
	// weights, arm i by those of alts[i-1], each partition keeping one
	// order per arm.
	split AllocationSplit
	alts  []*allocator
}

// arms is the number of orders a partition keeps: 1 without a split.
func (a *allocator) arms() int {
	if a == nil {
		return 1
	}
	return 1 + len(a.alts)
}

// arm returns the allocator of arm i (a itself for 0).
func (a *allocator) arm(i int) *allocator {
	if i == 0 {
		return a
	}
	return a.alts[i-1]
}

// armOf returns the arm that ranks participant id's offers: 0 without a
// split, so that matching costs nothing more then.
func (a *allocator) armOf(participantID int64) int {
	if a == nil || len(a.alts) == 0 {
		return 0
	}
	return a.split.arm(participantID)
}

// refreshes reports whether any arm ranks with weights, which
// RefreshAllocation must then recompute periodically.
func (a *allocator) refreshes() bool {
	for i := range a.arms() {
		if a.arm(i).weighted() {
			return true
		}
	}
	return false
}

// allocState is one estimate, computed at unix time at: under the balanced
// and edf policies the expected eligible participants per day by campaign
// id; under bidprice the weight of every priced quota by quota id.
type allocState struct {
	at     int64
	supply map[int64]float64
	quotaW map[int64]float64
}

// quotaWeight is the bid-price weight of quota id: 1 when it has none (a
// campaign indexed since the last refresh ranks by EPC).
func (st *allocState) quotaWeight(id int64) float64 {
	if st == nil {
		return 1
	}
	if w, ok := st.quotaW[id]; ok {
		return w
	}
	return 1
}

// weighted reports whether the allocator ranks with weights (any policy but
// greedy).
func (a *allocator) weighted() bool { return a != nil && a.policy.Weighted() }

// SetAllocation selects the allocation policy, reading supply from panel
// (nil: scarcity is left out), and republishes the current campaigns under
// it. Under a weighted policy call RefreshAllocation periodically: weights
// are computed when it runs and when campaigns are (re)indexed.
func (e *Engine) SetAllocation(a Allocation, panel *Panel) {
	e.setAllocator(&allocator{policy: a, panel: panel})
}

// SetAllocationSplit ranks each participant's offers under the policy of
// the split's arm the participant falls in (AllocationSplit.Assign), each
// policy with its own weights, reading supply from panel; it republishes
// the current campaigns with one order per arm. Without arms it is
// SetAllocation(AllocationGreedy, panel). Call RefreshAllocation
// periodically when any arm is weighted.
func (e *Engine) SetAllocationSplit(sp AllocationSplit, panel *Panel) {
	pols := sp.Policies()
	if len(pols) == 0 {
		e.SetAllocation(AllocationGreedy, panel)
		return
	}
	a := &allocator{policy: pols[0], panel: panel, split: sp}
	for _, p := range pols[1:] {
		a.alts = append(a.alts, &allocator{policy: p, panel: panel})
	}
	e.setAllocator(a)
}

func (e *Engine) setAllocator(a *allocator) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.alloc = a
	e.snap.Store(build(e.snap.Load().campaigns(), e.counters, e.alloc, nil))
}

// campaigns copies the definitions of every indexed campaign.
func (s *Snapshot) campaigns() []Campaign {
	var out []Campaign
	for _, c := range s.parts {
		for _, d := range c.defs(nil) {
			out = append(out, *d)
		}
	}
	return out
}

// Allocation returns the policy in use.
func (e *Engine) Allocation() Allocation {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if e.alloc == nil {
		return AllocationGreedy
	}
	return e.alloc.policy
}

// AllocationSplit returns the split in use (no arms without one).
func (e *Engine) AllocationSplit() AllocationSplit {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if e.alloc == nil {
		return AllocationSplit{}
	}
	return e.alloc.split
}

// AllocationRefreshedAt returns when (unix seconds) the weights in use were
// computed by RefreshAllocation: 0 before the first refresh and when no
// policy in use is weighted.
func (e *Engine) AllocationRefreshedAt() int64 {
	e.writeMu.Lock()
	a := e.alloc
	e.writeMu.Unlock()
	for i := range a.arms() {
		if arm := a.arm(i); arm.weighted() {
			if st := arm.state.Load(); st != nil {
				return st.at
			}
		}
	}
	return 0
}

// RefreshAllocation recomputes, off the request path, the panel supply of
// every campaign and republishes the current campaigns ranked with weights
// as of now (unix seconds): a new snapshot, so caches keyed on
// Snapshot.Version see the new ranking at once. It does nothing under
// AllocationGreedy.
func (e *Engine) RefreshAllocation(now int64) {
	e.writeMu.Lock()
	a := e.alloc
	e.writeMu.Unlock()
	if !a.refreshes() {
		return
	}
	snap := e.snap.Load()
	for i := range a.arms() {
		if arm := a.arm(i); arm.weighted() {
			arm.state.Store(arm.estimate(snap, now))
		}
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if e.alloc != a {
		return
	}
	if cur := e.snap.Load(); cur.alloc == a {
		e.snap.Store(cur.reweighed())
	} else {
		e.snap.Store(build(cur.campaigns(), e.counters, a, nil))
	}
}

// estimate computes the allocator's weights' inputs from the campaigns of
// s as of now: the panel supply of every campaign, or under bidprice the
// weight of every priced quota.
func (a *allocator) estimate(s *Snapshot, now int64) *allocState {
	st := &allocState{at: now, supply: make(map[int64]float64)}
	switch {
	case a.panel == nil:
	case a.policy == AllocationBidPrice:
		a.bidsMu.Lock()
		var prev map[int64]float64
		if old := a.state.Load(); old != nil {
			prev = old.quotaW
		}
		st.quotaW = s.priceQuotas(a.panel, now, &a.bids, prev)
		a.bidsMu.Unlock()
	default:
		s.scanSupply(a.panel, now, st.supply)
	}
	return st
}

// reweighed returns s ranked under the latest weights of every arm of its
// allocator as a new snapshot (a new version, so that answer caches drop
// the lists ranked under the old weights). A country whose campaigns
// changed since it was built (a delta, dead slots) is rebuilt whole, as a
// refresh always did; the index of every other country is kept and only
// its orders are recomputed: a refresh of an unchanged market of 100k
// campaigns costs a sort per arm, not an index build.
func (s *Snapshot) reweighed() *Snapshot {
	n := &Snapshot{counters: s.counters, alloc: s.alloc, parts: make(map[int32]*country, len(s.parts)), version: snapshotVersions.Add(1)}
	for id, c := range s.parts {
		if c.delta != nil || c.ndead > 0 {
			n.parts[id] = &country{base: buildPartition(c.defs(nil), s.counters, s.alloc, nil)}
			continue
		}
		c.base.reweigh()
		n.parts[id] = c
	}
	return n
}

// reweigh publishes, for every arm, an order of the partition's campaigns
// ranked under the arm's latest weights and the counters now.
func (p *partition) reweigh() {
	p.ordMu.Lock()
	defer p.ordMu.Unlock()
	seq := p.ctr.raises.Load() // before reading any bound
	for i := range p.alloc.arms() {
		p.orderAt(i).Store(p.armOrder(seq, p.alloc.arm(i)))
	}
	p.sinceFull = 0
}

// armOrder computes the partition's order under the policy and latest
// weights of al (an arm's allocator). seq must be read before any bound.
func (p *partition) armOrder(seq uint64, al *allocator) *rankOrder {
	st := al.state.Load()
	var w, x []float64
	if al.weighted() {
		n := len(p.camps)
		w, x = make([]float64, n), make([]float64, n)
		for slot := range p.camps {
			cm := &p.camps[slot]
			w[slot], x[slot] = al.weigh(st, p.cold[slot].def, cm.counter, p.quotas[cm.q0:cm.g0])
		}
	}
	return p.order(seq, w, x, p.quotaWeights(al, st))
}

// orderAt is where the order of arm i is published (p.ord for arm 0).
func (p *partition) orderAt(i int) *atomic.Pointer[rankOrder] {
	if i == 0 {
		return &p.ord
	}
	return &p.alts[i-1]
}

// Weight returns the balanced weight and exploration cap the snapshot's
// current ranking gives a campaign (1 and 0 under AllocationGreedy).
func (s *Snapshot) Weight(campaignID int64) (weight, explore float64, ok bool) {
	for _, c := range s.parts {
		if p, slot, found := c.slot(campaignID); found {
			o := p.ord.Load()
			if o.w == nil {
				return 1, 0, true
			}
			return o.w[slot], o.x[slot], true
		}
	}
	return 0, 0, false
}

// weigh returns the weight and exploration cap of campaign def with counter
// k and non-global quotas open under the allocator's policy and the supply
// estimate st (nil: none yet).
func (a *allocator) weigh(st *allocState, def *Campaign, k *campaignCounter, open []quotaMeta) (w, x float64) {
	in := AllocationInputs{SupplyPerDay: -1, Elapsed: -1, DaysInField: float64(def.DaysInField)}
	for i := range open {
		qm := &open[i]
		used := qm.counter.completes.Load() + max(qm.counter.inProgress.Load(), 0)
		if qm.clickBalanced {
			used = qm.counter.entries.Load()
		}
		in.Target += float64(max(qm.num, 0))
		in.Needed += float64(max(qm.num-used, 0))
		if qm.num > used {
			in.Open++
		}
	}
	in.Sessions = k.sessions.Load()
	in.Conversion = Conversion(def.Incidence, in.Sessions, k.completes.Load())
	if st != nil {
		if v, ok := st.supply[def.ID]; ok {
			in.SupplyPerDay = v
		}
		if def.FieldStart > 0 && st.at >= def.FieldStart {
			in.Elapsed = float64(st.at-def.FieldStart) / secondsPerDay
		}
	}
	switch a.policy {
	case AllocationEDF:
		return EDFWeight(in), 0
	case AllocationBidPrice:
		// The bound of its quotas' weights.
		for i := range def.Quotas {
			if q := &def.Quotas[i]; !q.Global {
				w = max(w, st.quotaWeight(q.ID))
			}
		}
		return w, 0
	}
	return AllocationWeight(in)
}

// quotaWeights returns the bid-price weight of each of the partition's
// quota slots under st when al ranks by bid prices (nil under any other
// policy).
func (part *partition) quotaWeights(al *allocator, st *allocState) []float64 {
	if al == nil || al.policy != AllocationBidPrice {
		return nil
	}
	qw := make([]float64, len(part.quotas))
	for q := range qw {
		qw[q] = st.quotaWeight(part.qdefs[q].ID)
	}
	return qw
}
