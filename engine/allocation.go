package engine

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Allocation names the policy that ranks a participant's eligible offers
// (docs/allocation.md). Eligibility never depends on it (docs/rules.md §11).
type Allocation uint8

const (
	// AllocationGreedy ranks by EPC alone.
	AllocationGreedy Allocation = iota
	// AllocationBalanced ranks by EPC × the campaign's weight (earliest
	// deadline and smallest remaining need first among the campaigns the
	// panel can still fill by their deadline) × a bounded exploration bonus
	// that grows with the uncertainty of the campaign's conversion estimate
	// (large for campaigns with few sessions).
	AllocationBalanced
	// AllocationEDF ranks by EPC × 1/(days left) among the campaigns the
	// panel can still fill by their deadline, and puts those that cannot
	// last: earliest deadline first with the rejection of late jobs, the
	// evaluation's baseline for deadline scheduling (docs/allocation.md).
	AllocationEDF
	// AllocationBidPrice ranks by EPC × the weight of the best open quota
	// the participant would fill: its payout net of the quota's prices, the
	// duals of the day's programme that allocates the panel's sessions to
	// the open quotas, each needing its remaining need at an even pace
	// over its days left (engine/bidprice.go, docs/allocation.md).
	AllocationBidPrice
)

// allocationNames are the policies' flag names, by value.
var allocationNames = [...]string{AllocationGreedy: "greedy", AllocationBalanced: "balanced", AllocationEDF: "edf", AllocationBidPrice: "bidprice"}

// String returns the policy's flag name.
func (a Allocation) String() string {
	if int(a) < len(allocationNames) {
		return allocationNames[a]
	}
	return fmt.Sprintf("allocation(%d)", a)
}

// Weighted reports whether the policy ranks with weights computed off the
// request path (Engine.RefreshAllocation must then run periodically).
func (a Allocation) Weighted() bool { return a != AllocationGreedy }

// ParseAllocation reads a policy name as the --allocation flag spells it.
func ParseAllocation(s string) (Allocation, error) {
	for a, name := range allocationNames {
		if s == name {
			return Allocation(a), nil
		}
	}
	return 0, fmt.Errorf("allocation: unknown policy %q (want greedy, balanced, edf or bidprice)", s)
}

// Balanced policy parameters; docs/allocation.md explains each.
const (
	// ExploreBonus is the largest exploration bonus: a campaign's score is
	// multiplied by 1 + explore·u, u a per-(participant, campaign) draw in
	// [0, 1) and explore at most ExploreBonus.
	ExploreBonus = 0.3
	// ExploreZ scales the exploration bonus with the uncertainty of the
	// conversion estimate: explore = ExploreZ × its standard error / the
	// estimate, so that the score's top reaches the upper end of a 2σ band
	// of the conversion, and shrinks as 1/√(sessions + ConversionPriorWeight).
	ExploreZ = 2
	// ExploreSessions is the number of sessions with an outcome from which
	// a campaign's estimate is taken as learned and it gets no exploration
	// bonus: the bound of every established campaign stays tight, which
	// keeps the matching walk short. A campaign the panel cannot fill by its
	// deadline gets none at all: most campaigns of a large market are of
	// that kind, and exploring them cost matching walks 22-30% over greedy
	// for no gain in the simulator.
	ExploreSessions = 100
	// needScale, needExp: a feasible campaign's need factor is
	// (needScale / (completes still needed per open quota + 1))^needExp,
	// 2 for a campaign one complete short of each open quota.
	needScale, needExp = 4, 0.5
	// urgencyExp: a feasible campaign's urgency factor is
	// (1 / days left)^urgencyExp, earliest deadline first.
	urgencyExp = 0.5
	// hardConversion, hardExp: a feasible campaign whose conversion
	// estimate c is below hardConversion is raised by
	// (hardConversion / c)^hardExp (its completes cost more visits, so
	// greedy ranking starves it; the root keeps the raise from costing the
	// partners' revenue).
	hardConversion, hardExp = 0.5, 0.6
	// learnFloor is the least weight of a feasible campaign still learning
	// its conversion (fewer than ExploreSessions sessions with an outcome)
	// whose work ahead is large (completes still needed / conversion ≥
	// ExploreSessions sessions): ranked as greedy would, not deferred. Its
	// schedule (whether it can finish, when it may wait) rests on its
	// conversion estimate, and it will take that many sessions anyway, so
	// taking the first ones now costs little and puts the schedule on its
	// real conversion; a campaign with little left finishes before its
	// estimate matters.
	learnFloor = 1.0
	// Bounds of the weight.
	weightMin, weightMax = 0.25, 4
	// supplySample is how many active participants per country the supply
	// scan looks at (those with the lowest sampleKey: the same sample in
	// every process); the sums are scaled to the country's active panel.
	supplySample = 1000
)

// AllocationInputs are the figures a campaign's balanced weight is computed
// from, all of them visible to the campaign's buyer in its own campaign
// (docs/rules.md §11): quotas, completes, days in field, sessions, and the
// panel's feasibility.
type AllocationInputs struct {
	// Target is the sum of the campaign's non-global quota targets; Needed
	// the part still open (target − completes − sessions in progress, per
	// quota, never below 0).
	Target, Needed float64
	// Open is the number of non-global quotas that still need completes.
	Open int
	// Sessions is the number of sessions that reached an outcome.
	Sessions int64
	// Conversion is the estimated chance that an entry completes.
	Conversion float64
	// SupplyPerDay is the expected number of panel participants per day
	// who can fill an open quota of the campaign; negative when unknown.
	SupplyPerDay float64
	// DaysInField is the campaign's field period (days, > 0); Elapsed the
	// days since it started, negative when unknown.
	DaysInField, Elapsed float64
}

// daysLeft is the campaign's field period left, in days: at least half a
// day, the whole period (DefaultDaysInField when unset) when its start is
// unknown.
func (in *AllocationInputs) daysLeft() float64 {
	days := in.DaysInField
	if days <= 0 {
		days = DefaultDaysInField
	}
	if in.Elapsed < 0 {
		return days
	}
	return max(days-in.Elapsed, 0.5)
}

// AllocationWeight returns the campaign's weight (within [0.25, 4]) and its
// exploration bonus cap (0..ExploreBonus). A campaign is ranked by EPC ×
// weight × (1 + explore·ExplorationDraw(participant, campaign)).
//
// The weight schedules quotas the way one maximises the number of jobs
// finished by their deadlines (earliest deadline first, rejecting the jobs
// that cannot finish): a campaign the panel cannot fill before its field
// period ends (completes still needed > supply per day × days left ×
// conversion) gets 1, ranked by EPC alone, taking offers only where nothing
// that can still finish ranks higher. A feasible one gets need × urgency ×
// hardness: need = (needScale / (needed per open quota + 1))^needExp, so
// the quotas closest to full go first; urgency = (1 / days left)^urgencyExp,
// so the earliest deadlines go first; hardness = max(hardConversion /
// conversion, 1)^hardExp, so a low-conversion campaign that can still
// finish is not starved by its low EPC. Unknown supply counts as feasible; an unknown
// start as a full field period left.
// Exploration is ExploreZ standard errors of the conversion estimate
// (√(c(1−c)/(sessions + ConversionPriorWeight))) relative to the estimate
// c, at most ExploreBonus: large for a campaign with few sessions,
// shrinking as its sessions grow, and 0 from ExploreSessions sessions on,
// for a campaign that cannot finish, and for an estimate of 0 or 1.
func AllocationWeight(in AllocationInputs) (weight, explore float64) {
	left := in.daysLeft()
	needed := max(in.Needed, 0)
	exploreUntil := int64(ExploreSessions)
	switch {
	case in.Target > 0 && needed == 0:
		// Every non-global quota is full (or its last sessions are in
		// progress): nobody can be offered it, and the lowest weight keeps
		// it out of the way of matching walks.
		weight = weightMin
	case in.SupplyPerDay >= 0 && needed > in.SupplyPerDay*left*max(in.Conversion, 0):
		weight = 1
		exploreUntil = 0 // see ExploreSessions
	default:
		per := needed
		if in.Open > 0 {
			per = needed / float64(in.Open)
		}
		weight = math.Pow(needScale/(per+1), needExp) * math.Pow(1/left, urgencyExp)
		if in.Conversion > 0 {
			weight *= math.Pow(max(hardConversion/in.Conversion, 1), hardExp)
		}
		weight = clamp(weight, weightMin, weightMax)
		if c := in.Conversion; c > 0 && in.Sessions < ExploreSessions && needed/c >= ExploreSessions {
			// Still learning, with at least ExploreSessions sessions of work
			// ahead: ranked at least as greedy would rank it (see learnFloor).
			weight = max(weight, learnFloor)
		}
	}
	if c := in.Conversion; c > 0 && c < 1 && in.Sessions < exploreUntil {
		sd := math.Sqrt(c * (1 - c) / (float64(max(in.Sessions, 0)) + ConversionPriorWeight))
		explore = min(ExploreZ*sd/c, ExploreBonus)
	}
	return weight, explore
}

// edfRejected is the EDF weight of a campaign that cannot finish by its
// deadline: below 1/days left of any field period (at most a year), so that
// every campaign that can still finish ranks first.
const edfRejected = 1e-3

// EDFWeight returns the weight of the earliest-deadline-first baseline: 1 /
// days left (at least half a day; a full field period when the start is
// unknown) for a campaign the panel can still fill by its deadline (or whose
// supply is not known yet), edfRejected for one it cannot. Its score is EPC ×
// weight, so EPC orders campaigns of the same deadline. It has no other
// factor: the evaluation compares every policy with it (docs/allocation.md).
func EDFWeight(in AllocationInputs) float64 {
	left := in.daysLeft()
	if in.SupplyPerDay >= 0 && max(in.Needed, 0) > in.SupplyPerDay*left*max(in.Conversion, 0) {
		return edfRejected
	}
	return 1 / left
}

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }

// ExplorationDraw is the participant's deterministic draw in [0, 1) for a
// campaign's exploration bonus: a hash of the two ids, so the same
// participant sees the same ranking for the same weights, while different
// participants explore different campaigns.
func ExplorationDraw(participantID, campaignID int64) float64 {
	x := uint64(participantID)*0x9e3779b97f4a7c15 ^ uint64(campaignID)*0xc2b2ae3d27d4eb4f
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
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
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.alloc = &allocator{policy: a, panel: panel}
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

// AllocationRefreshedAt returns when (unix seconds) the weights in use were
// computed by RefreshAllocation: 0 before the first refresh and under
// AllocationGreedy.
func (e *Engine) AllocationRefreshedAt() int64 {
	e.writeMu.Lock()
	a := e.alloc
	e.writeMu.Unlock()
	if !a.weighted() {
		return 0
	}
	if st := a.state.Load(); st != nil {
		return st.at
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
	if !a.weighted() {
		return
	}
	st := &allocState{at: now, supply: make(map[int64]float64)}
	switch {
	case a.panel == nil:
	case a.policy == AllocationBidPrice:
		a.bidsMu.Lock()
		var prev map[int64]float64
		if old := a.state.Load(); old != nil {
			prev = old.quotaW
		}
		st.quotaW = e.snap.Load().priceQuotas(a.panel, now, &a.bids, prev)
		a.bidsMu.Unlock()
	default:
		e.snap.Load().scanSupply(a.panel, now, st.supply)
	}
	a.state.Store(st)
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if e.alloc != a {
		return
	}
	if cur := e.snap.Load(); cur.alloc == a {
		e.snap.Store(cur.reweighed(st))
	} else {
		e.snap.Store(build(cur.campaigns(), e.counters, a, nil))
	}
}

// reweighed returns s ranked under the weights of st as a new snapshot (a
// new version, so that answer caches drop the lists ranked under the old
// weights). A country whose campaigns changed since it was built (a delta,
// dead slots) is rebuilt whole, as a refresh always did; the index of every
// other country is kept and only its order is recomputed: a refresh of an
// unchanged market of 100k campaigns costs a sort, not an index build.
func (s *Snapshot) reweighed(st *allocState) *Snapshot {
	n := &Snapshot{counters: s.counters, alloc: s.alloc, parts: make(map[int32]*country, len(s.parts)), version: snapshotVersions.Add(1)}
	for id, c := range s.parts {
		if c.delta != nil || c.ndead > 0 {
			n.parts[id] = &country{base: buildPartition(c.defs(nil), s.counters, s.alloc, nil)}
			continue
		}
		c.base.reweigh(st)
		n.parts[id] = c
	}
	return n
}

// reweigh publishes an order of the partition's campaigns ranked under the
// weights of st and the counters now.
func (p *partition) reweigh(st *allocState) {
	p.ordMu.Lock()
	defer p.ordMu.Unlock()
	seq := p.ctr.raises.Load() // before reading any bound
	n := len(p.camps)
	w, x := make([]float64, n), make([]float64, n)
	for slot := range p.camps {
		cm := &p.camps[slot]
		w[slot], x[slot] = p.alloc.weigh(st, p.cold[slot].def, cm.counter, p.quotas[cm.q0:cm.g0])
	}
	p.sinceFull = 0
	p.ord.Store(p.order(seq, w, x, p.quotaWeights(st)))
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

// scanSupply estimates, for every campaign, how many panel participants per
// day can fill one of its open quotas: each sampled participant of the
// country active in the last FeasibilityWindowDays counts with its daily
// participation rate when the campaign's device, open non-global quotas and
// global caps admit it. Per-participant rules (exclusions, entries,
// retargeting, daily caps) are left out: they do not change how scarce the
// campaign is.
func (s *Snapshot) scanSupply(panel *Panel, now int64, out map[int64]float64) {
	byCountry := sampleCountries(s, panel, now)
	for id, c := range s.parts {
		sm := byCountry[id]
		parts := []*partition{c.base}
		if c.delta != nil {
			parts = append(parts, c.delta)
		}
		for _, part := range parts {
			sums := make([]float64, len(part.camps))
			if sm != nil {
				// Which quotas are full is read once per scan, not once per participant, and
				// only the campaigns with an open non-global quota are scanned.
				full := make([]bool, len(part.quotas))
				for q := range part.quotas {
					qm := &part.quotas[q]
					full[q] = qm.counter.full(qm.num, qm.clickBalanced)
				}
				open := make([]int32, 0, len(part.camps))
				for slot := range part.camps {
					cm := &part.camps[slot]
					for q := cm.q0; q < cm.g0; q++ {
						if !full[q] {
							open = append(open, int32(slot))
							break
						}
					}
				}
				scan := newSupplyScan(part, sm.ps, sm.rates)
				for _, slot := range open {
					sums[slot] = scan.campaign(slot, full)
				}
			}
			scale := 0.0
			if sm != nil && len(sm.ps) > 0 {
				scale = float64(sm.active) / float64(len(sm.ps))
			}
			for slot := range part.camps {
				out[part.cold[slot].id] = sums[slot] * scale
			}
		}
	}
}

// sampleCountries samples, for every country with campaigns in s, the
// panel's participants active in the last FeasibilityWindowDays with their
// daily participation rates (supplySampler).
func sampleCountries(s *Snapshot, panel *Panel, now int64) map[int32]*supplySampler {
	since := now - FeasibilityWindowDays*secondsPerDay
	byCountry := make(map[int32]*supplySampler, len(s.parts))
	panel.Range(func(p *Participant, a Activity) bool {
		if s.parts[p.CountryID] == nil || a.LastActive <= since {
			return true
		}
		sm := byCountry[p.CountryID]
		if sm == nil {
			sm = new(supplySampler)
			byCountry[p.CountryID] = sm
		}
		sm.offer(p, float64(max(a.ActiveDays(now, FeasibilityWindowDays), 1))/FeasibilityWindowDays)
		return true
	})
	for _, sm := range byCountry {
		sm.finish()
	}
	return byCountry
}

// supplySampler keeps the supplySample active participants of a country
// with the lowest sampleKey, whatever order the panel hands them in (its
// shards are laid out by a per-process hash seed): the same panel gives the
// same sample and the same sums in every process and run.
type supplySampler struct {
	heap    []sampled // max-heap by key while offered; by participant id after finish
	active  int
	rateSum float64 // the daily rates of every active participant offered
	ps      []*Participant
	rates   []float64
}

type sampled struct {
	key  uint64
	p    *Participant
	rate float64
}

// sampleKey spreads participant ids uniformly (splitmix64's finaliser), so
// the lowest keys are a uniform sample.
func sampleKey(id int64) uint64 {
	x := uint64(id) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// offer counts p as active and keeps it in the sample if its key is among
// the lowest; p is copied only when kept (Range reuses it).
func (sm *supplySampler) offer(p *Participant, rate float64) {
	sm.active++
	sm.rateSum += rate
	k := sampleKey(p.ID)
	h := sm.heap
	if len(h) < supplySample {
		h = append(h, sampled{k, p.detached(), rate})
		for i := len(h) - 1; i > 0; { // sift up
			up := (i - 1) / 2
			if h[up].key >= h[i].key {
				break
			}
			h[up], h[i] = h[i], h[up]
			i = up
		}
		sm.heap = h
		return
	}
	if k >= h[0].key {
		return
	}
	h[0] = sampled{k, p.detached(), rate}
	for i := 0; ; { // sift down
		l, m := 2*i+1, i
		if l < len(h) && h[l].key > h[m].key {
			m = l
		}
		if r := l + 1; r < len(h) && h[r].key > h[m].key {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// finish orders the sample by participant id, so that sums over it are
// added in the same order whatever order the panel was read in.
func (sm *supplySampler) finish() {
	slices.SortFunc(sm.heap, func(a, b sampled) int { return cmp.Compare(a.p.ID, b.p.ID) })
	for _, e := range sm.heap {
		sm.ps = append(sm.ps, e.p)
		sm.rates = append(sm.rates, e.rate)
	}
	sm.heap = nil
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
// quota slots under st (nil under any other policy).
func (part *partition) quotaWeights(st *allocState) []float64 {
	if part.alloc == nil || part.alloc.policy != AllocationBidPrice {
		return nil
	}
	qw := make([]float64, len(part.quotas))
	for q := range qw {
		qw[q] = st.quotaWeight(part.qdefs[q].ID)
	}
	return qw
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
