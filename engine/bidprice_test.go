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
		q := &lpQuota{id: int64(i + 1), rates: rates, value: values[i], use: 1, need: needs[i], left: min(lefts[i], bidPriceHorizon), w: 1,
			set: make([]uint64, (n+63)/64)}
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

// TestBidPricesYield: quota 1 (payout 2) and quota 2 (payout 1) admit the
// same 100 participants; quota 1 needs 10 sessions of the day, quota 2 its
// whole day's pace, 60. Greedy would give quota 1 the first place of every
// list; its price must take it below quota 2 for enough participants that
// quota 2 gets more than it would second, and quota 1 still gets its need.
func TestBidPricesYield(t *testing.T) {
	qs := lpInstance(100, [][]int{nil, nil}, []float64{2, 1}, []float64{10, 60}, []float64{1, 1})
	before := allocated(qs, 100, 1)
	solveBidPrices(qs, 100, 1)
	if qs[0].w >= 1 || qs[1].w < 1 || qs[0].value*qs[0].w > qs[1].value*qs[1].w {
		t.Fatalf("weights %v, %v: quota 1 should yield to quota 2", qs[0].w, qs[1].w)
	}
	after := allocated(qs, 100, 1)
	if after[2] <= before[2] || after[1] < 10*0.95 {
		t.Errorf("sessions before %v, after %v", before, after)
	}
}

// TestBidPricesBounds: a quota with far more supply than need is priced to
// the least weight; one far short of its pace gets the most (1 +
// deliveryValue); one whose day's supply (10 × 4/7) is between its pace (5:
// 10 needed over 2 days) and its need stays at 1.
func TestBidPricesBounds(t *testing.T) {
	qs := lpInstance(300, [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, {20, 21, 22, 23, 24, 25, 26, 27, 28, 29}},
		[]float64{1, 1, 1}, []float64{0.01, 50, 10}, []float64{1, 1, 2})
	solveBidPrices(qs, 300, 1)
	if math.Abs(qs[0].w-minQuotaWeight) > 0.05 || math.Abs(qs[1].w-(1+deliveryValue)) > 0.05 || math.Abs(qs[2].w-1) > 0.05 {
		t.Errorf("weights %v %v %v, want %v, %v, 1", qs[0].w, qs[1].w, qs[2].w, minQuotaWeight, 1+deliveryValue)
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
