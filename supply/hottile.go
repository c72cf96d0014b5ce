package supply

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/switchboard/switchboard/engine"
)

const (
	hotSamplesPerMinute = 512 // reservoir size of one minute
	hotMinutes          = 60  // the window: the last hour
	hotQuantile         = 0.9 // top decile
)

// minuteSample is a reservoir sample of the EPCs served during one minute, filled with
// atomics only.
type minuteSample struct {
	n atomic.Uint64
	v [hotSamplesPerMinute]atomic.Uint64 // float64 bits
}

// add adds the EPCs of one answer's offers: one atomic add reserves their places in the
// minute's count, then each place past the reservoir's size replaces a random sample with
// the reservoir's probability (an add per offer, on a counter that every core writes, was
// the costliest shared write of an answer).
func (m *minuteSample) add(offers []engine.Offer) {
	n := uint64(len(offers))
	if n == 0 {
		return
	}
	first := m.n.Add(n) - n
	for k := range offers {
		i := first + uint64(k)
		if i >= hotSamplesPerMinute {
			i = rand.Uint64N(i + 1)
			if i >= hotSamplesPerMinute {
				continue
			}
		}
		m.v[i].Store(math.Float64bits(offers[k].EPC))
	}
}

// hotTiles estimates the 90th percentile of the EPCs of offers served in the last hour: a
// reservoir sample per minute, and every minute the percentile over the last 60 samples.
// Offers at or above it are hot tiles. Until the first minute closes nothing is hot.
type hotTiles struct {
	cur       atomic.Pointer[minuteSample]
	threshold atomic.Uint64 // float64 bits

	mu      sync.Mutex
	history [hotMinutes][]float64
	slot    int
}

func newHotTiles() *hotTiles {
	h := &hotTiles{}
	h.cur.Store(new(minuteSample))
	h.threshold.Store(math.Float64bits(math.Inf(1)))
	return h
}

// record samples the EPCs of the offers of one answer.
func (h *hotTiles) record(offers []engine.Offer) { h.cur.Load().add(offers) }

// isHot reports whether epc is in the top decile of the last hour.
func (h *hotTiles) isHot(epc float64) bool {
	return epc > 0 && epc >= math.Float64frombits(h.threshold.Load())
}

// roll closes the current minute and recomputes the threshold.
func (h *hotTiles) roll() {
	old := h.cur.Swap(new(minuteSample))
	n := min(old.n.Load(), hotSamplesPerMinute)
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = math.Float64frombits(old.v[i].Load())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.history[h.slot] = vals
	h.slot = (h.slot + 1) % hotMinutes
	var all []float64
	for _, m := range h.history {
		all = append(all, m...)
	}
	if len(all) == 0 {
		h.threshold.Store(math.Float64bits(math.Inf(1)))
		return
	}
	slices.Sort(all)
	i := int(math.Ceil(hotQuantile*float64(len(all)))) - 1
	h.threshold.Store(math.Float64bits(all[max(i, 0)]))
}
