package engine

import (
	"math"
	"testing"
)

// lpInstance builds quotas over n sampled participants of daily rate 1,
// quota i admitting the participants set[i] lists (nil: all), with
// lefts[i] days of field period left.
func lpInstance(n int, sets [][]int, values, needs, lefts []float64) []*lpQuota {
	rates := make([]float64, n)
	for i := range rates {
		rates[i] = 1
	}
	qs := make([]*lpQuota, len(values))
	for i := range qs {
		q := &lpQuota{id: int64(i + 1), rates: rates, value: values[i], use: 1, need: needs[i], left: min(lefts[i], bidPriceHorizon), days: lefts[i], w: 1,
			ceiling: deliveryValue / max(lefts[i], minDaysLeft), set: make([]uint64, (n+63)/64)}
		q.pace = q.need * q.left / lefts[i]
		if sets[i] == nil {
			for p := range n {
				q.set[p/64] |= 1 << (p % 64)
			}
		}
		for _, p := range sets[i] {
			q.set[p/64] |= 1 << (p % 64)
		}
		qs[i] = q
	}
	return qs
}

// allocated returns each quota's sessions at its weights.
func allocated(qs []*lpQuota, n int, scale float64) map[int64]float64 {
	got := map[int64]float64{}
	newAllocation(qs, n).allocate(func(q *lpQuota, days float64) { got[q.id] = days * scale * q.use })
	return got
}

// TestListShare: a participant's day goes to its first three quotas open at
// each moment, 4/7, 2/7 and 1/7, each moment counted once.
func TestListShare(t *testing.T) {
	var d [3]float64
	got := []float64{listShare(&d, 1), listShare(&d, 0.5), listShare(&d, 1), listShare(&d, 1), listShare(&d, 0.25)}
	// 1: first all day; 0.5: second for half a day; 1: second in the second
	// half, third in the first; 1: third in the second half, fourth (none)
	// in the first; 0.25: fifth.
	want := []float64{4.0 / 7, 1.0 / 7, 1.0/7 + 0.5/7, 0.5 / 7, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("list shares %v, want %v", got, want)
		}
	}
	if sum := got[0] + got[1] + got[2] + got[3] + got[4]; sum > 1+1e-12 {
		t.Errorf("one participant-day gave %v", sum)
	}
}

// TestBidPricesShareSupply: two quotas admit the same 100 participants, each
// needing 60 sessions of the day. Counted once, the participants' day gives
// a list of two 4/7 and 2/7 of it, less than either needs, and neither is
// priced below 1; counted once per quota, each would see 100 sessions and
// be priced down.
func TestBidPricesShareSupply(t *testing.T) {
	qs := lpInstance(100, [][]int{nil, nil}, []float64{1, 1}, []float64{60, 60}, []float64{1, 1})
	got := allocated(qs, 100, 1)
	if s := got[1] + got[2]; math.Abs(s-600.0/7) > 1e-9 {
		t.Fatalf("two quotas over the same participants took %v participant-days of 100 (%v)", s, got)
	}
	solveBidPrices(qs, 100, 1)
	for _, q := range qs {
		if q.w < 1 {
			t.Errorf("quota %d priced at %v although the shared day gives both less than their need", q.id, q.w)
		}
	}
}

// TestBidPricesReject: quotas 1 (payout 1.5), 2 (payout 1) and 3 (payout
// 1.01) admit the same 100 participants. Quota 2 needs 50 of its last day,
// more than the second place of every list brings (100 × 2/7) and less than
// the first (100 × 4/7): it is priced up until it outbids quota 1. Quota 3
// needs 500 of its last day, more than the whole panel brings: it is
// rejected, weighs 1 and takes nothing from quota 2 (priced at its ceiling,
// it would outbid quota 2 for every first place).
func TestBidPricesReject(t *testing.T) {
	qs := lpInstance(100, [][]int{nil, nil, nil}, []float64{1.5, 1, 1.01}, []float64{1000, 50, 500}, []float64{5, 1, 1})
	solveBidPrices(qs, 100, 1)
	if math.Abs(qs[0].w-1) > 1e-9 || qs[1].w < 1.4 || qs[1].w > 1+deliveryValue || !qs[2].rejected || math.Abs(qs[2].w-1) > 1e-9 {
		t.Fatalf("weights %v %v %v (rejected %v), want 1, about 1.5, 1 (rejected)", qs[0].w, qs[1].w, qs[2].w, qs[2].rejected)
	}
}

// TestBidPricesBounds: a quota behind its pace is priced at most its
// ceiling, deliveryValue / days left. Quota 1 (payout 1) needs 40 of its
// last day from 100 participants it shares with quota 2 (payout 1.9, on
// pace in second place): at most 2, it outbids quota 2 for the first
// places. With 4 days left and the same pace, 40 a day, its ceiling (1.25)
// does not reach quota 2's payout: second in every list, it cannot finish
// and is rejected. No weight is below 1 or above maxQuotaWeight.
func TestBidPricesBounds(t *testing.T) {
	for _, c := range []struct {
		need, days float64
		lo, hi     float64
		rejected   bool
	}{{40, 1, 1.8, 2, false}, {160, 4, 1, 1, true}} {
		qs := lpInstance(100, [][]int{nil, nil}, []float64{1, 1.9}, []float64{c.need, 100}, []float64{c.days, 5})
		solveBidPrices(qs, 100, 1)
		if q := qs[0]; q.w < c.lo-1e-9 || q.w > c.hi+1e-9 || q.rejected != c.rejected || q.w > 1+q.ceiling+1e-9 {
			t.Errorf("%v days left: weight %v (rejected %v), want within [%v, %v] (rejected %v)", c.days, q.w, q.rejected, c.lo, c.hi, c.rejected)
		}
		for _, q := range qs {
			if q.w < 1 || q.w > maxQuotaWeight {
				t.Errorf("%v days left: quota %d weight %v out of [1, %v]", c.days, q.id, q.w, maxQuotaWeight)
			}
		}
	}
}

// TestBidPricesDeadline: a quota closing within the horizon takes only the
// part of its participants' day before it closes.
func TestBidPricesDeadline(t *testing.T) {
	qs := lpInstance(10, [][]int{nil, nil}, []float64{2, 1}, []float64{100, 100}, []float64{0.25, 1})
	got := allocated(qs, 10, 1)
	if want := 10 * 0.25 * 4.0 / 7; math.Abs(got[1]-want) > 1e-9 {
		t.Errorf("quota open a quarter day: %v, want %v", got[1], want)
	}
	if want := 10 * (0.25*2.0/7 + 0.75*4.0/7); math.Abs(got[2]-want) > 1e-9 {
		t.Errorf("quota open the day, second while the other is open: %v, want %v", got[2], want)
	}
}
