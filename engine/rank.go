package engine

// ConversionPriorWeight is m, the number of pseudo-sessions the incidence
// prior weighs in the conversion estimate: a campaign's observed conversion
// takes over from its stated incidence once it has seen well more than m
// sessions with an outcome (half-way at m).
const ConversionPriorWeight = 20

// Offer is one campaign offered to a participant, with the figures it was
// ranked by.
type Offer struct {
	CampaignID, BuyerID int64
	CPICents            int64
	LOI, Incidence      int
	// Conversion is the estimated probability (0..1) that an entry completes.
	Conversion float64
	// EPC is the expected partner earnings per click in USD:
	// cpi × revenue share × Conversion.
	EPC float64
	// Score is the key the allocation policy ranked the offer by: EPC
	// under AllocationGreedy, EPC × weight × exploration bonus under
	// AllocationBalanced (docs/allocation.md).
	Score float64
}

// Conversion estimates the chance that an entry completes: the observed rate
// shrunk toward the stated incidence, (completes + m·incidence/100) /
// (sessions + m) with m = ConversionPriorWeight, clamped to [0, 1].
func Conversion(incidence int, sessions, completes int64) float64 {
	prior := float64(incidence) / 100
	c := (float64(completes) + ConversionPriorWeight*prior) / (float64(max(sessions, 0)) + ConversionPriorWeight)
	return min(max(c, 0), 1)
}

// topEntry is an offer kept by a match, as the heap orders it: its score, its campaign id
// (ties) and where the offer itself is stored.
type topEntry struct {
	score float64
	id    int64
	i     int32 // index in topK.store
}

// worse orders offers: lower Score first, equal Score broken by higher campaign id, so that
// ranking is deterministic.
func worse(a, b *topEntry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.id > b.id
}

// topK keeps the best k offers of one match: a min-heap (worst at the root) of small entries
// naming their offers in store, so that sifting moves 24 bytes instead of an Offer and an
// offer that would not enter is never built.
type topK struct {
	k     int
	heap  []topEntry
	store []Offer
}

func (t *topK) reset(k int) {
	t.k, t.heap, t.store = k, t.heap[:0], t.store[:0]
}

// full reports whether k offers are kept: from then on only a better one enters.
func (t *topK) full() bool { return len(t.heap) == t.k }

// worst is the score of the worst offer kept; valid when full.
func (t *topK) worst() float64 { return t.heap[0].score }

// admits reports whether an offer of score for campaign id would enter.
func (t *topK) admits(score float64, id int64) bool {
	if len(t.heap) < t.k {
		return true
	}
	return t.k > 0 && worse(&t.heap[0], &topEntry{score: score, id: id})
}

// push keeps o, which admits accepted, in place of the worst when full.
func (t *topK) push(o *Offer) {
	h := t.heap
	if len(h) < t.k {
		i := int32(len(t.store))
		t.store = append(t.store, *o)
		h = append(h, topEntry{o.Score, o.CampaignID, i})
		for j := len(h) - 1; j > 0; {
			parent := (j - 1) / 2
			if !worse(&h[j], &h[parent]) {
				break
			}
			h[j], h[parent] = h[parent], h[j]
			j = parent
		}
		t.heap = h
		return
	}
	e := &h[0]
	t.store[e.i] = *o
	e.score, e.id = o.Score, o.CampaignID
	siftDown(h, 0, len(h))
}

func siftDown(h []topEntry, i, n int) {
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(&h[r], &h[l]) {
			m = r
		}
		if !worse(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// appendBest appends the offers kept, best first, to dst; t is spent.
func (t *topK) appendBest(dst []Offer) []Offer {
	h := t.heap
	for n := len(h) - 1; n > 0; n-- {
		h[0], h[n] = h[n], h[0]
		siftDown(h, 0, n)
	}
	for i := range h {
		dst = append(dst, t.store[h[i].i])
	}
	return dst
}
