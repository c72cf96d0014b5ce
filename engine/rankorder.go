package engine

import (
	"cmp"
	"slices"
)

// rankOrder lists every campaign slot by descending bound: keys[i] ≥
// score/share of campaign slots[i] for every campaign whose conversion bound
// has not been raised since raise number seq. Under the balanced allocation
// it carries the weights it was sorted with, by slot (w, x; nil under
// greedy, where the score is the EPC): weights and order are published
// together, so a match always ranks with the weights its walk is bounded by.
type rankOrder struct {
	seq   uint64
	slots []int32
	keys  []float64
	w, x  []float64
	// qw is, under bidprice, each quota slot's weight: an offer's score is
	// its EPC × the largest weight of the open non-global quotas the
	// participant matches, and w the largest of the campaign's. Nil under
	// any other policy.
	qw []float64
	// explorers lists, by position as slots does, what the walk needs to
	// skip an exploring campaign without touching its slot's arrays: its
	// exploration cap and campaign id (x 0: not exploring). Nil under greedy.
	explorers []explorer
	// gates lists each position's gate (partition.gates of its slot), so
	// that the walk refuses most ineligible campaigns reading in sequence.
	gates []gate
}

// explorer is one position of rankOrder.explorers.
type explorer struct {
	x  float64
	id int64
}

// place fills what ord keeps by position (gates, explorers) from its slots
// once they are final.
func (ord *rankOrder) place(p *partition) {
	ord.gates = make([]gate, len(ord.slots))
	for i, s := range ord.slots {
		ord.gates[i] = p.gates[s]
	}
	if !slices.ContainsFunc(ord.x, func(x float64) bool { return x > 0 }) {
		return // greedy, or no campaign exploring: the walk skips the check
	}
	ord.explorers = make([]explorer, len(ord.slots))
	for i, s := range ord.slots {
		if x := ord.x[s]; x > 0 {
			ord.explorers[i] = explorer{x: x, id: p.cold[s].id}
		}
	}
}

// boundSlack makes keys robust to float rounding between the bound and the
// EPC computed from the counts.
const boundSlack = 1 + 1e-9

// boundKey bounds EPC/share of a campaign (0 for a non-positive cpi, whose
// EPC is never positive).
func boundKey(cpi int64, inc int32, k *campaignCounter) float64 {
	if cpi <= 0 {
		return 0
	}
	return float64(cpi) / 100 * k.convBound(inc) * boundSlack
}

// weighted turns the EPC bound key of slot i into its rank-order key under
// the weights w and exploration caps x (nil: greedy, the key itself): the
// bound of EPC × weight × (1 + explore × draw) for every draw.
func weighted(key float64, w, x []float64, i int) float64 {
	if w == nil {
		return key
	}
	return key * w[i] * (1 + x[i]) * boundSlack
}

// refreshAsync recomputes the ranking order in the background, once at a
// time: matching falls back to a slower path while many campaigns have had
// their bounds raised since the order was computed.
func (p *partition) refreshAsync() {
	if p.refreshing.CompareAndSwap(false, true) {
		go func() {
			p.refresh()
			p.refreshing.Store(false)
		}()
	}
}

// fullRefreshEvery is how often a refresh recomputes the whole order (every
// campaign's bound tightened, every slot sorted) rather than moving only the
// campaigns raised since the current order.
const fullRefreshEvery = 64

// refresh publishes a new order, keeping the current weights. Most refreshes
// move only the campaigns whose bounds were raised since the current order
// (reorder: a merge, O(campaigns) sequential copying); every fullRefreshEvery-th,
// or when the raise log cannot tell which were raised, it recomputes the bounds
// of every campaign (tightening those that drifted up) and sorts them all. Under
// a stream of completes a refresh is asked for every refreshAfter raises, and at
// 100k campaigns a full one costs milliseconds.
// Under a split every arm's order is refreshed the same way.
func (p *partition) refresh() {
	p.ordMu.Lock()
	defer p.ordMu.Unlock()
	seq := p.ctr.raises.Load() // before reading any bound
	full := p.sinceFull >= fullRefreshEvery
	for i := range 1 + len(p.alts) {
		at := p.orderAt(i)
		old := at.Load()
		if !full {
			if ids, ok := p.ctr.raisedSince(old.seq, raiseLogSize-1, nil); ok {
				at.Store(p.reorder(old, seq, ids))
				continue
			}
		}
		full = true
		at.Store(p.order(seq, old.w, old.x, old.qw))
	}
	if full {
		p.sinceFull = 0
	} else {
		p.sinceFull++
	}
}

// reorder returns old with the slots of the raised campaigns (ids; repeats and
// campaigns of other partitions are ignored) keyed by their bounds now and
// moved to their place; every other slot keeps its key, which bounds it still
// since its bound was not raised after old.seq. seq, read before any bound,
// is the new order's.
func (p *partition) reorder(old *rankOrder, seq uint64, ids []int64) *rankOrder {
	n := len(old.slots)
	movedSet := make([]uint64, (n+63)/64)
	type moved struct {
		slot int32
		key  float64
	}
	var ms []moved
	for _, id := range ids {
		ref, ok := p.byID.get(id)
		if !ok || ref.self < 0 || movedSet[ref.self>>6]&(1<<(ref.self&63)) != 0 {
			continue
		}
		movedSet[ref.self>>6] |= 1 << (ref.self & 63)
		m := &p.camps[ref.self]
		key := weighted(boundKey(m.cpi, m.inc, m.counter), old.w, old.x, int(ref.self))
		ms = append(ms, moved{ref.self, key})
	}
	slices.SortFunc(ms, func(a, b moved) int { return cmp.Compare(b.key, a.key) })
	ord := &rankOrder{seq: seq, slots: make([]int32, n), keys: make([]float64, n), w: old.w, x: old.x, qw: old.qw}
	slots, keys := ord.slots, ord.keys
	j, k := 0, 0
	for i, s := range old.slots {
		if movedSet[s>>6]&(1<<(s&63)) != 0 {
			continue
		}
		for ; j < len(ms) && ms[j].key > old.keys[i]; j++ {
			slots[k], keys[k] = ms[j].slot, ms[j].key
			k++
		}
		slots[k], keys[k] = s, old.keys[i]
		k++
	}
	for ; j < len(ms); j++ {
		slots[k], keys[k] = ms[j].slot, ms[j].key
		k++
	}
	ord.place(p)
	return ord
}

// score is the rank key of an offer of slot c under the order's policy.
func (o *rankOrder) score(epc float64, c int32, participantID, campaignID int64) float64 {
	if o.w == nil {
		return epc
	}
	s := epc * o.w[c]
	if x := o.x[c]; x > 0 {
		s *= 1 + x*ExplorationDraw(participantID, campaignID)
	}
	return s
}

// order computes the ranking order of the partition: every slot by
// descending key, the bound of its EPC/share times its weight and largest
// exploration bonus (w and x nil: EPC alone; qw the quotas' weights under
// bidprice). seq must be read before any bound.
func (part *partition) order(seq uint64, w, x, qw []float64) *rankOrder {
	n := len(part.camps)
	ord := &rankOrder{seq: seq, slots: make([]int32, n), w: w, x: x, qw: qw}
	keys := make([]float64, n)
	for i := range part.camps {
		m := &part.camps[i]
		m.counter.tighten(part.ctr)
		ord.slots[i] = int32(i)
		keys[i] = weighted(boundKey(m.cpi, m.inc, m.counter), w, x, i)
	}
	slices.SortStableFunc(ord.slots, func(a, b int32) int { return cmp.Compare(keys[b], keys[a]) })
	ord.keys = make([]float64, n)
	for i, s := range ord.slots {
		ord.keys[i] = keys[s]
	}
	ord.place(part)
	return ord
}
