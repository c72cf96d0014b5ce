package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistogramIndexRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		v := int64(r.Uint64() >> uint(1+r.IntN(63)))
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("index %d of %d out of range", i, v)
		}
		lo, w := histBounds(i)
		if uint64(v) < uint64(lo) || uint64(v) >= uint64(lo)+uint64(w) {
			t.Fatalf("value %d not in its bucket [%d, %d)", v, lo, lo+w)
		}
		if lo >= 2*histSub && float64(w)/float64(lo) > 1.0/histSub {
			t.Fatalf("bucket [%d, +%d) wider than 1/%d of its bound", lo, w, histSub)
		}
	}
	for v := int64(0); v < 4*histSub; v++ { // small values are exact
		if lo, w := histBounds(histIndex(v)); v < 2*histSub && (lo != v || w != 1) {
			t.Fatalf("value %d not exact: bucket [%d, +%d)", v, lo, w)
		}
	}
	if i := histIndex(math.MaxInt64); i >= histBuckets {
		t.Fatalf("MaxInt64 maps to %d, beyond %d buckets", i, histBuckets)
	}
}

// TestHistogramQuantiles compares quantiles with the exact ones of the recorded values:
// each must be within the histogram's bound of relative error of the exact order statistic.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dists := map[string]func() int64{
		"lognormal latency": func() int64 { return int64(math.Exp(r.NormFloat64()*1.2+13) + 0.5) }, // ~0.4 ms median
		"uniform":           func() int64 { return r.Int64N(10_000_000) },
		"bimodal": func() int64 {
			if r.IntN(100) == 0 {
				return 50_000_000 + r.Int64N(1_000_000)
			}
			return 200_000 + r.Int64N(50_000)
		},
		"small exact": func() int64 { return r.Int64N(200) },
	}
	bound := 1.0 / (2 * histSub)
	for name, draw := range dists {
		h := NewHistogram()
		vals := make([]int64, 200_000)
		var sum float64
		for i := range vals {
			vals[i] = draw()
			sum += float64(vals[i])
			h.Record(vals[i])
		}
		slices.Sort(vals)
		for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			rank := max(int(math.Ceil(q*float64(len(vals)))), 1)
			exact := vals[rank-1]
			got := h.Quantile(q)
			if rel := math.Abs(float64(got-exact)) / math.Max(float64(exact), 1); rel > bound+1e-12 && got != exact {
				t.Errorf("%s: q%.4f = %d, exact %d: relative error %.5f > %.5f", name, q, got, exact, rel, bound)
			}
		}
		if h.Count() != uint64(len(vals)) || h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
			t.Errorf("%s: count/min/max %d/%d/%d, want %d/%d/%d", name, h.Count(), h.Min(), h.Max(), len(vals), vals[0], vals[len(vals)-1])
		}
		if math.Abs(h.Mean()-sum/float64(len(vals))) > 1e-6*sum/float64(len(vals)) {
			t.Errorf("%s: mean %f, want %f", name, h.Mean(), sum/float64(len(vals)))
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := int64(1); i <= 10_000; i++ {
		if i%3 == 0 {
			a.Record(i * 1000)
		} else {
			b.Record(i * 1000)
		}
		all.Record(i * 1000)
	}
	a.Merge(b)
	for _, q := range []float64{0.1, 0.5, 0.99} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("merged q%v = %d, want %d", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != all.Count() || a.Min() != all.Min() || a.Max() != all.Max() {
		t.Error("merged count, min or max differ")
	}
	e := NewHistogram()
	if e.Quantile(0.5) != 0 || e.Min() != 0 || e.Mean() != 0 {
		t.Error("empty histogram is not all zero")
	}
	e.Record(-5)
	if e.Max() != 0 {
		t.Error("a negative value was not recorded as 0")
	}
}
