package bench

import (
	"math"
	"math/bits"
	"time"
)

// histSubBits sets the histogram's precision: every power-of-two range of values is split
// into 2^histSubBits equal buckets, so a bucket is at most 1/2^histSubBits of its lower bound
// wide and a quantile read back as the bucket's midpoint is within 1/2^(histSubBits+1)
// (0.4%) of a value the histogram recorded.
const histSubBits = 7

const histSub = 1 << histSubBits

// histBuckets covers every non-negative int64.
const histBuckets = (63-histSubBits)*histSub + 2*histSub

// Histogram is a log-linear (HDR-style) histogram of non-negative int64 values, here
// latencies in nanoseconds. Values below 2^histSubBits are kept exactly; above, the relative
// error is bounded as histSubBits says. It is not safe for concurrent use: give every worker
// its own and Merge them.
type Histogram struct {
	counts   []uint64
	n        uint64
	sum      float64
	min, max int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, histBuckets), min: math.MaxInt64}
}

// histIndex is the bucket of v >= 0: values below 2·histSub map to themselves; above, the
// bucket keeps the top histSubBits+1 significant bits of v.
func histIndex(v int64) int {
	u := uint64(v)
	shift := bits.Len64(u) - 1 - histSubBits
	if shift <= 0 {
		return int(u)
	}
	return shift*histSub + int(u>>uint(shift))
}

// histBounds returns the smallest value of bucket i and its width.
func histBounds(i int) (lo, width int64) {
	if i < 2*histSub {
		return int64(i), 1
	}
	shift := i/histSub - 1
	m := int64(i - shift*histSub)
	return m << uint(shift), int64(1) << uint(shift)
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	h.n++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// RecordDuration adds one duration in nanoseconds.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value of o.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Min is the smallest recorded value (0 when empty).
func (h *Histogram) Min() int64 {
	if h.n == 0 {
		return 0
	}
	return h.min
}

// Max is the largest recorded value.
func (h *Histogram) Max() int64 { return h.max }

// Mean is the exact mean of the recorded values.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns the value at quantile q in [0, 1]: the midpoint of the bucket that holds
// the ceil(q·n)-th smallest value, clamped to the exact minimum and maximum.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	rank = min(rank, h.n)
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			lo, w := histBounds(i)
			v := lo + (w-1)/2
			return max(h.min, min(h.max, v))
		}
	}
	return h.max
}

// Reset forgets every value.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.n, h.sum, h.min, h.max = 0, 0, math.MaxInt64, 0
}
