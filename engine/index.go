package engine

import (
	"cmp"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// partition is the index of the active campaigns of one country.
//
// Matching evaluates campaigns one at a time, in descending order of an
// upper bound of their EPC (rankOrder), and stops as soon as the k-th best
// offer found beats the bound of the next campaign: with a realistic market
// only a few hundred campaigns are looked at, whatever the market's size.
// Each campaign's quotas and conditions are compiled into flat arrays; a
// condition on a select question (or AGE) is a 128-bit code mask tested
// against the participant's answers compiled the same way, so evaluating a
// campaign touches a few contiguous cache lines. Text conditions (ZIP) and
// codes outside 0..127 go through inverted postings (answer → conditions)
// that are scanned once per match.
type partition struct {
	ctr *Counters

	camps  []campMeta // hot fields, by slot
	cold   []campCold // the rest, by slot
	quotas []quotaMeta
	qdefs  []*Quota // by quota slot
	conds  []condMeta
	qids   []int32 // questions with conditions, sorted; condMeta.qs indexes it

	// Postings from an answer to the conditions it satisfies.
	codes  keyTable // codeKey → code outside 0..127
	shorts keyTable // shortKey → text of at most 7 bytes
	texts  map[textKey]span
	spans  []span // codes and shorts values
	posts  []uint32
	textQs []int32 // numbers text questions for shortKey

	// byID maps a campaign id to its slot here (self, -1 when it is not an
	// active campaign of this country) and to the slots its entry blocks
	// through campaign relationships (blocks[b0:b1]).
	byID   idTable
	blocks []int32

	gates []gate // by slot

	ord        atomic.Pointer[rankOrder]
	ordMu      sync.Mutex // serializes publishing a new order
	refreshing atomic.Bool
	sinceFull  int        // refreshes since the last full one (reorder); ordMu guards it
	alloc      *allocator // nil: greedy
}

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

// gate is what the walk can refuse a campaign by without reading its slot's
// arrays, which lie at random in memory: the devices it accepts, and one
// question that every one of its non-global quotas conditions by codes
// 0..127 alone, with the union of those conditions' masks. A participant
// with none of those codes matches none of its quotas. Walks under the
// balanced allocation meet many campaigns few participants qualify for
// (docs/allocation.md), and most are refused here.
type gate struct {
	mask    [2]uint64
	qs      uint32
	devices uint8 // 0: all
	coded   bool  // qs and mask hold a question
	never   bool  // no non-global quota: never open
	// q0 and c0 are where the slot's quotas and their conditions begin (campMeta.q0 and its
	// first quota's c0): evaluation reads its first quota and condition without waiting for
	// the campaign's own line, three reads at random in memory issued at once, not in turn.
	q0 int32
	c0 uint32
}

// refuses reports whether the campaign cannot be offered to a participant
// with device and answers compiled in pm.
func (g *gate) refuses(pm [][2]uint64, device uint8) bool {
	if g.never || g.devices != 0 && g.devices&device == 0 {
		return true
	}
	if !g.coded {
		return false
	}
	m := &pm[g.qs]
	return m[0]&g.mask[0]|m[1]&g.mask[1] == 0
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

type span struct{ off, n uint32 }

// textKey names a text answer to a question in the postings.
type textKey struct {
	question int32
	text     string
}

// maxTextQs bounds the text questions one partition numbers for shortKey.
const maxTextQs = 255

// shortKey packs a text of 1..7 bytes without NUL bytes (every postal code
// format served) and the number of its question (1..maxTextQs) into one
// integer, injectively.
func shortKey(qnum int, s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 7 || qnum == 0 {
		return 0, false
	}
	v := uint64(qnum) << 56
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return 0, false
		}
		v |= uint64(s[i]) << (8 * i)
	}
	return v, true
}

// textQ returns the number of question q among the partition's text
// questions, 0 when it has none (or too many to number).
func (p *partition) textQ(q int32) int {
	for i, x := range p.textQs {
		if x == q {
			return i + 1
		}
	}
	return 0
}

type idRef struct {
	self   int32
	b0, b1 int32
	// reentry is the campaign's reentry minutes (its cold record's), here so that marking a
	// participant's entries reads no cold record: at 100k campaigns each of those reads
	// missed the cache, half of the marking's time.
	reentry int32
}

// campMeta is what matching reads of every campaign it evaluates.
type campMeta struct {
	cpi        int64
	counter    *campaignCounter
	q0, g0, q1 int32 // quotas [q0,g0) non-global, [g0,q1) global
	maxDaily   int32
	inc        int32
	devices    uint8 // 0 all
	restricted bool  // cold.restriction != nil
}

// campCold is the rest of a campaign: read for offers and entry rules.
type campCold struct {
	id, buyer   int64
	loi         int32
	reentry     int32 // minutes; ReentryNever; 0 unlimited
	restriction *restrictions
	def         *Campaign
}

// quotaMeta is the matching view of one quota.
type quotaMeta struct {
	counter       *quotaCounter
	num           int64
	c0, nc        uint32 // conditions conds[c0:c0+nc]
	clickBalanced bool
	global        bool
}

// condMeta is one compiled condition: it matches when the participant's
// codes for question qids[qs] meet mask, or (posted) when a posting of one
// of the participant's answers named it during this match.
type condMeta struct {
	mask   [2]uint64 // codes 0..127
	qs     uint32
	posted bool // has texts or codes outside 0..127
}

// maskCodes is the code range conditions keep as a mask.
const maskCodes = 128

func codeKey(q int32, code int32) uint64 { return uint64(uint32(q))<<32 | uint64(uint32(code)) }

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

// yieldEvery is how many campaigns a build goes through between two calls of its yield: a
// few milliseconds of work at 100k campaigns.
const yieldEvery = 256

// buildPartition indexes the given active campaigns of one country, taking
// counter pointers from ctr, calling yield (when not nil) between steps.
func buildPartition(defs []*Campaign, ctr *Counters, alloc *allocator, yield func()) *partition {
	n := len(defs)
	seq := ctr.raises.Load() // before reading any bound
	kc := ctr.campaignsOf(defs)
	qctr := ctr.quotasOf(defs)
	keys := make([]float64, n)
	perm := make([]int32, n)
	// Under the balanced allocation the keys carry the weights (see
	// rankOrder), so that slots are laid out in the order matching walks.
	var ws, xs []float64
	if alloc.weighted() {
		st := alloc.state.Load()
		ws, xs = make([]float64, n), make([]float64, n)
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
	for i, c := range defs {
		kc[i].tighten(ctr)
		keys[i] = weighted(boundKey(c.CPICents, int32(c.Incidence), kc[i]), ws, xs, i)
		perm[i] = int32(i)
	}
	// Slots in bound order: matching walks them (nearly) sequentially.
	slices.SortStableFunc(perm, func(x, y int32) int { return cmp.Compare(keys[y], keys[x]) })

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
		camps:  make([]campMeta, n),
		cold:   make([]campCold, n),
		quotas: make([]quotaMeta, 0, nq),
		qdefs:  make([]*Quota, 0, nq),
		conds:  make([]condMeta, 0, nc),
	}
	for q := range qset {
		p.qids = append(p.qids, q)
	}
	slices.Sort(p.qids)

	ord := &rankOrder{seq: seq, slots: make([]int32, n), keys: make([]float64, n)}
	if ws != nil {
		ord.w, ord.x = make([]float64, n), make([]float64, n)
	}
	var pb postBuilder
	pb.reserve(np)
	for slot, ci := range perm {
		c := defs[ci]
		ord.slots[slot] = int32(slot)
		ord.keys[slot] = keys[ci]
		if ws != nil {
			ord.w[slot], ord.x[slot] = ws[ci], xs[ci]
		}
		r := newRestrictions(c)
		p.cold[slot] = campCold{
			id: c.ID, buyer: c.BuyerID, loi: int32(c.LOI), reentry: int32(c.ReentryMinutes),
			restriction: r, def: c,
		}
		m := &p.camps[slot]
		*m = campMeta{
			cpi: c.CPICents, counter: kc[ci], maxDaily: int32(c.MaxDailyCompletes),
			inc: int32(c.Incidence), devices: c.Devices, restricted: r != nil,
		}
		m.q0 = int32(len(p.quotas))
		qc := qctr[ci]
		for pass := 0; pass < 2; pass++ { // non-global quotas first, then global
			if pass == 1 {
				m.g0 = int32(len(p.quotas))
			}
			for qi := range c.Quotas {
				q := &c.Quotas[qi]
				if q.Global != (pass == 1) {
					continue
				}
				p.quotas = append(p.quotas, quotaMeta{
					counter: qc[qi], num: int64(q.NumRespondents),
					c0: uint32(len(p.conds)), nc: uint32(len(q.Conditions)),
					clickBalanced: q.ClickBalanced, global: q.Global,
				})
				p.qdefs = append(p.qdefs, q)
				for j := range q.Conditions {
					p.conds = append(p.conds, p.compile(&pb, &q.Conditions[j], uint32(len(p.conds))))
				}
			}
		}
		m.q1 = int32(len(p.quotas))
		if yield != nil && slot%yieldEvery == yieldEvery-1 {
			yield()
		}
	}
	p.codes, p.shorts, p.texts, p.spans, p.posts = pb.layout()
	if yield != nil {
		yield()
	}
	if alloc != nil {
		ord.qw = p.quotaWeights(alloc.state.Load())
	}
	p.indexRelations()
	p.placeGates()
	if yield != nil {
		yield()
	}
	ord.place(p)
	p.ord.Store(ord)
	return p
}

// placeGates computes every slot's gate. Of the questions every non-global
// quota of a campaign conditions by codes alone, the gate keeps the one
// likely to refuse the most participants: the fewest codes in the union of
// the campaign's masks against the codes any condition of the partition
// names for that question (two genders of two, a decade of ages of eighty).
func (p *partition) placeGates() {
	names := make([]int, len(p.qids)) // codes named per question slot
	{
		all := make([][2]uint64, len(p.qids))
		for i := range p.conds {
			c := &p.conds[i]
			all[c.qs][0] |= c.mask[0]
			all[c.qs][1] |= c.mask[1]
		}
		for i, m := range all {
			names[i] = bits.OnesCount64(m[0]) + bits.OnesCount64(m[1])
		}
	}
	p.gates = make([]gate, len(p.camps))
	for s := range p.camps {
		m := &p.camps[s]
		g := &p.gates[s]
		g.devices = m.devices
		g.q0, g.c0 = m.q0, uint32(len(p.conds))
		if m.q0 < m.q1 {
			g.c0 = p.quotas[m.q0].c0
		}
		if m.q0 == m.g0 {
			g.never = true
			continue
		}
		best := 2.0
		first := &p.quotas[m.q0]
		for c := first.c0; c < first.c0+first.nc; c++ {
			qs := p.conds[c].qs
			union, ok := p.unionOn(m, qs)
			if !ok {
				continue
			}
			n := bits.OnesCount64(union[0]) + bits.OnesCount64(union[1])
			if share := float64(n) / float64(max(names[qs], 1)); share < best {
				best = share
				g.coded, g.qs, g.mask = true, qs, union
			}
		}
	}
}

// unionOn returns the union of the masks by which every non-global quota of
// campaign m conditions question slot qs by codes alone (its first such
// condition), and false when one of them has no such condition.
func (p *partition) unionOn(m *campMeta, qs uint32) ([2]uint64, bool) {
	var union [2]uint64
	for q := m.q0; q < m.g0; q++ {
		qm := &p.quotas[q]
		found := false
		for c := qm.c0; c < qm.c0+qm.nc; c++ {
			if cd := &p.conds[c]; cd.qs == qs && !cd.posted {
				union[0] |= cd.mask[0]
				union[1] |= cd.mask[1]
				found = true
				break
			}
		}
		if !found {
			return union, false
		}
	}
	return union, true
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

// qslot returns the index of question q in qids, or -1.
func (p *partition) qslot(q int32) int {
	if len(p.qids) <= 16 {
		for i, x := range p.qids {
			if x == q {
				return i
			}
		}
		return -1
	}
	if i, ok := slices.BinarySearch(p.qids, q); ok {
		return i
	}
	return -1
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

// indexRelations fills byID: every campaign's own slot, and for every
// campaign id named in a relationship the slots an entry into it blocks.
func (p *partition) indexRelations() {
	p.byID.init(len(p.cold))
	for ci := range p.cold {
		p.byID.set(p.cold[ci].id, idRef{self: int32(ci), reentry: p.cold[ci].reentry})
	}
	blocked := make(map[int64][]int32)
	var order []int64
	for ci := range p.cold {
		c := p.cold[ci].def
		for _, r := range c.Related {
			if r == c.ID {
				continue
			}
			if _, seen := blocked[r]; !seen {
				order = append(order, r)
			}
			blocked[r] = append(blocked[r], int32(ci))
		}
	}
	for _, r := range order {
		ref, ok := p.byID.get(r)
		if !ok {
			ref.self = -1
		}
		ref.b0 = int32(len(p.blocks))
		p.blocks = append(p.blocks, blocked[r]...)
		ref.b1 = int32(len(p.blocks))
		p.byID.set(r, ref)
	}
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
func (p *partition) refresh() {
	p.ordMu.Lock()
	defer p.ordMu.Unlock()
	old := p.ord.Load()
	seq := p.ctr.raises.Load() // before reading any bound
	if p.sinceFull < fullRefreshEvery {
		if ids, ok := p.ctr.raisedSince(old.seq, raiseLogSize-1, nil); ok {
			p.sinceFull++
			p.ord.Store(p.reorder(old, seq, ids))
			return
		}
	}
	p.sinceFull = 0
	p.ord.Store(p.order(seq, old.w, old.x, old.qw))
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

// bytes estimates the memory the partition holds (its own arrays and maps,
// not the campaign definitions it points to).
func (p *partition) bytes() int {
	const mapEntryOverhead = 8 // control byte and load-factor slack, roughly
	n := cap(p.camps)*int(unsafe.Sizeof(campMeta{})) +
		cap(p.cold)*int(unsafe.Sizeof(campCold{})) +
		cap(p.quotas)*int(unsafe.Sizeof(quotaMeta{})) + cap(p.qdefs)*8 +
		cap(p.conds)*int(unsafe.Sizeof(condMeta{})) +
		cap(p.posts)*4 + cap(p.spans)*int(unsafe.Sizeof(span{})) + cap(p.blocks)*4 +
		cap(p.gates)*int(unsafe.Sizeof(gate{})) +
		p.codes.bytes() + p.shorts.bytes()
	if o := p.ord.Load(); o != nil {
		n += cap(o.slots)*4 + (cap(o.keys)+cap(o.w)+cap(o.x)+cap(o.qw))*8 + cap(o.explorers)*int(unsafe.Sizeof(explorer{})) +
			cap(o.gates)*int(unsafe.Sizeof(gate{}))
	}
	for k := range p.texts {
		n += int(unsafe.Sizeof(k)+unsafe.Sizeof(span{})) + mapEntryOverhead + len(k.text)
	}
	n += p.byID.bytes()
	for i := range p.cold {
		if r := p.cold[i].restriction; r != nil {
			n += int(unsafe.Sizeof(*r)) + (cap(r.excluded)+cap(r.suppliers))*8 + cap(r.byID)*16 +
				(cap(r.byDevice)+cap(r.byHash))*int(unsafe.Sizeof(textExpiry{}))
		}
	}
	return n
}
