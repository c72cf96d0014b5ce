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

// worse orders offers: lower Score first, equal Score broken by higher
// campaign id, so that ranking is deterministic.
func worse(a, b *Offer) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.CampaignID > b.CampaignID
}

// pushTop keeps h a min-heap (worst at the root) of at most k offers.
func pushTop(h []Offer, k int, o Offer) []Offer {
	if len(h) < k {
		h = append(h, o)
		for i := len(h) - 1; i > 0; {
			parent := (i - 1) / 2
			if !worse(&h[i], &h[parent]) {
				break
			}
			h[i], h[parent] = h[parent], h[i]
			i = parent
		}
		return h
	}
	if k > 0 && worse(&h[0], &o) {
		h[0] = o
		siftDown(h, 0, len(h))
	}
	return h
}

func siftDown(h []Offer, i, n int) {
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

// sortTop turns the heap into a list ordered best first, in place.
func sortTop(h []Offer) {
	for n := len(h) - 1; n > 0; n-- {
		h[0], h[n] = h[n], h[0]
		siftDown(h, 0, n)
	}
}
