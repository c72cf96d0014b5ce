package marketsim

import (
	"math"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// TestMarketModel runs a small market with every session traced and checks
// the model: sessions only while their campaign is in field (campaigns
// arrive and leave), a complete about the LOI after entry, a screen-out in
// the first quarter of it, an abandoned session released at the engine's
// timeout (2 × LOI + 10 minutes), abandonment more frequent for long
// interviews, and a participant inside a campaign's screener completing
// more often than one outside.
func TestMarketModel(t *testing.T) {
	var n, arrived, in, inDone, out, outDone int
	var short, shortAbandoned, long, longAbandoned int
	traceSession = func(c *simCampaign, sp *simParticipant, at int64, ev *event) {
		n++
		if at < c.arrive || at >= c.end {
			t.Errorf("campaign %d: session at %d outside its field period [%d, %d)", c.def.ID, at, c.arrive, c.end)
		}
		if c.arrive > c.def.FieldStart-1 && c.arrive > 0 && !c.probe && c.before == nil {
			arrived++
		}
		loi := int64(c.def.LOI)
		d := ev.at - at
		switch {
		case ev.kind == evRelease:
			if d != 60*(2*loi+10) {
				t.Errorf("abandoned session released after %d s, LOI %d", d, loi)
			}
		case ev.done:
			if float64(d) < 0.7*60*float64(loi)-1 || float64(d) > 1.3*60*float64(loi)+1 {
				t.Errorf("complete after %d s, LOI %d", d, loi)
			}
		default:
			if d < 60 || float64(d) > 60*(1+0.25*float64(loi))+1 {
				t.Errorf("screen-out after %d s, LOI %d", d, loi)
			}
		}
		if ev.kind == evRelease || ev.done {
			if loi <= 12 {
				short++
				if ev.kind == evRelease {
					shortAbandoned++
				}
			} else if loi >= 23 {
				long++
				if ev.kind == evRelease {
					longAbandoned++
				}
			}
		}
		if c.screen >= 0 {
			if a := sp.answers[c.screen]; a >= c.lo && a <= c.hi {
				in++
				inDone += b2i(ev.done || ev.kind == evRelease)
			} else {
				out++
				outDone += b2i(ev.done || ev.kind == evRelease)
			}
		}
	}
	defer func() { traceSession = nil }()
	r, err := Run(Config{Campaigns: 25, Arriving: 20, Participants: 1000, Days: 3, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if n != r.Sessions || n == 0 || arrived == 0 {
		t.Fatalf("%d sessions traced, %d in the result, %d in campaigns arrived during the run", n, r.Sessions, arrived)
	}
	sa, la := float64(shortAbandoned)/float64(short), float64(longAbandoned)/float64(long)
	if short < 50 || long < 50 || la <= sa {
		t.Errorf("abandoned: %d of %d qualified sessions with LOI ≤ 12, %d of %d with LOI ≥ 23", shortAbandoned, short, longAbandoned, long)
	}
	ri, ro := float64(inDone)/float64(in), float64(outDone)/float64(out)
	if in < 100 || out < 100 || ri < 1.5*ro {
		t.Errorf("qualified: %d of %d sessions inside the screener (%.2f), %d of %d outside (%.2f)", inDone, in, ri, outDone, out, ro)
	}
}

// TestScreenerKeepsTheMean: a screener leaves the panel's mean conversion
// multiplier at 1, its inside converting above and its outside at the
// contrast.
func TestScreenerKeepsTheMean(t *testing.T) {
	cfg := Config{Participants: 2000, Seed: 3}
	cfg.defaults()
	ps := newParticipants(&cfg, newRand(3))
	c := simCampaign{mean: 0.3}
	r := newRand(4)
	for range 20 {
		c.screen, c.lo, c.hi, c.in, c.out = screener(r, ps, 0.3)
		sum := 0.0
		for i := range ps {
			sp := ps[i]
			sp.quality = 1
			sum += c.conversion(&sp) / c.mean
		}
		if m := sum / float64(len(ps)); c.screen < 0 || math.Abs(m-1) > 1e-9 || c.out != 0.3 || c.in <= 1 {
			t.Errorf("screener %+v: mean multiplier %.4f", c, m)
		}
	}
}

// TestChoice: a participant picks the first position most, and a long
// interview less than a short one at the same position.
func TestChoice(t *testing.T) {
	cfg := Config{}
	cfg.defaults()
	count := func(lois []int) []int {
		got := make([]int, len(lois))
		for i := range 10000 {
			if k := cfg.choose((float64(i)+0.5)/10000, len(lois), func(k int) int { return lois[k] }); k >= 0 {
				got[k]++
			}
		}
		return got
	}
	short, long := count([]int{5, 5, 5}), count([]int{30, 5, 5})
	if short[0] <= short[1] || short[1] <= short[2] || long[0] >= short[0] || math.Abs(float64(short[0])-5500) > 2 {
		t.Errorf("choices: LOIs 5,5,5 %v; 30,5,5 %v", short, long)
	}
}

// TestPairedRatio: the ratio of means and its bootstrap interval.
func TestPairedRatio(t *testing.T) {
	ys := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	xs := make([]float64, len(ys))
	for i, y := range ys {
		xs[i] = 1.1 * y
	}
	if p := pairedRatio(xs, ys); math.Abs(p.Ratio-1.1) > 1e-12 || math.Abs(p.Lo-1.1) > 1e-12 || math.Abs(p.Hi-1.1) > 1e-12 {
		t.Errorf("exact ratio: %+v", p)
	}
	// Noisy pairs: the interval holds the ratio and narrows with more seeds.
	r := newRand(9)
	width := func(n int) (Paired, float64) {
		xs, ys := make([]float64, n), make([]float64, n)
		for i := range n {
			ys[i] = 10 + r.Float64()
			xs[i] = ys[i] * (1.05 + 0.1*(r.Float64()-0.5))
		}
		p := pairedRatio(xs, ys)
		return p, p.Hi - p.Lo
	}
	p10, w10 := width(10)
	p400, w400 := width(400)
	for _, p := range []Paired{p10, p400} {
		if !(p.Lo < p.Ratio && p.Ratio < p.Hi) || p.Lo < 1.0 || p.Hi > 1.1 {
			t.Errorf("interval %+v", p)
		}
	}
	if w400 >= w10/2 {
		t.Errorf("interval width %.4f at 400 seeds, %.4f at 10", w400, w10)
	}
	if s := (Paired{1.123, 1.1, 1.15}).String(); s != "+12.3% (+10.0, +15.0)" {
		t.Errorf("String: %q", s)
	}
}

var _ = engine.AllocationGreedy
