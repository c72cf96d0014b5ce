package marketsim

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/switchboard/switchboard/bench"
	"github.com/switchboard/switchboard/engine"
)

// Variant is one way of running a market: an allocation policy and the
// partners' reroute_attempts (docs/rules.md §10).
type Variant struct {
	Allocation engine.Allocation
	Reroute    int
}

// String names the variant: the policy, with "+rerouteN" when re-routing.
func (v Variant) String() string {
	if v.Reroute > 0 {
		return fmt.Sprintf("%s+reroute%d", v.Allocation, v.Reroute)
	}
	return v.Allocation.String()
}

// Variants is every policy under every reroute setting, policies first.
func Variants(policies []engine.Allocation, reroutes []int) []Variant {
	var out []Variant
	for _, r := range reroutes {
		for _, a := range policies {
			out = append(out, Variant{a, r})
		}
	}
	return out
}

// Comparison is every variant run on every seed of one market shape.
type Comparison struct {
	Base     Config    // the shape; Seed, Allocation and RerouteAttempts are set per run
	Seeds    []int64   // seeds run
	Variants []Variant // variants run, in report order
	Runs     map[Variant][]Result
}

// Compare runs base under each variant for each seed, workers runs at a
// time, until ctx is done. Each run is independent and deterministic, so
// the order they run in does not change the results.
func Compare(ctx context.Context, base Config, seeds []int64, variants []Variant, workers int) (*Comparison, error) {
	cs := []*Comparison{newComparison(base, seeds, variants)}
	return cs[0], runAll(ctx, cs, workers, nil)
}

func newComparison(base Config, seeds []int64, variants []Variant) *Comparison {
	c := &Comparison{Base: base, Seeds: seeds, Variants: variants, Runs: map[Variant][]Result{}}
	for _, v := range variants {
		c.Runs[v] = make([]Result, len(seeds))
	}
	return c
}

// runAll runs every (variant, seed) of every comparison, workers at a time,
// calling done (when not nil) after each run with the runs done and the
// total; once ctx is done it starts no more runs and returns its error.
func runAll(ctx context.Context, cs []*Comparison, workers int, done func(n, total int)) error {
	type job struct {
		c *Comparison
		v Variant
		i int
	}
	var all []job
	for _, c := range cs {
		for i := range c.Seeds {
			for _, v := range c.Variants {
				all = append(all, job{c, v, i})
			}
		}
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	n := 0
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				cfg := j.c.Base
				cfg.Seed, cfg.Allocation, cfg.RerouteAttempts = j.c.Seeds[j.i], j.v.Allocation, j.v.Reroute
				r, err := Run(cfg)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				j.c.Runs[j.v][j.i] = r
				n++
				if done != nil {
					done(n, len(all))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, j := range all {
		if ctx.Err() != nil {
			break
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return firstErr
}

// Figure is one reported figure of a Result.
type Figure struct {
	Name, Format string
	Scale        float64
	Of           func(Result) float64
}

// The figures the evaluation's targets are stated on.
var (
	FigQuotas    = Figure{"quotas filled by their deadline", "%.1f%%", 100, Result.QuotasFilledShare}
	FigRevenue   = Figure{"partner revenue per visit", "$%.4f", 1, Result.RevenuePerVisit}
	FigCompletes = Figure{"completes per 1,000 visits", "%.1f", 1, Result.CompletesPer1000}
)

// figures are the figures of a single shape's report.
var figures = []Figure{
	FigQuotas, FigRevenue, FigCompletes,
	{"campaigns filled by their deadline", "%.1f%%", 100, Result.CampaignsFilled},
	{"screen-outs per complete", "%.2f", 1, Result.TermsPerComplete},
	{"entered and left with nothing, per 1,000 visits", "%.1f", 1, Result.LeftEmptyPer1000},
	{"re-routed sessions per 1,000 visits", "%.1f", 1, func(r Result) float64 { return 1000 * ratio(r.Rerouted, r.Arrivals) }},
	{"buyer cost per complete", "$%.2f", 1, Result.CostPerComplete},
	{"probe: sessions in the run", "%.0f", 1, func(r Result) float64 { return float64(r.ProbeTotal) }},
	{"probe: offers shown / fair share, whole run", "%.0f%%", 100, Result.ProbeShareOfFair},
}

// Mean is variant v's mean of f over the seeds.
func (c *Comparison) Mean(v Variant, f func(Result) float64) float64 {
	s := 0.0
	for _, r := range c.Runs[v] {
		s += f(r)
	}
	return s / float64(max(len(c.Runs[v]), 1))
}

// Paired is the ratio of two variants' means of a figure over the same
// seeds, with the bootstrap 95% interval of that ratio.
type Paired struct {
	Ratio, Lo, Hi float64
}

// bootstrapResamples is how many resamples of the seeds a Paired interval
// is computed from.
const bootstrapResamples = 2000

// Paired compares variant a with variant b on figure f: the ratio of
// their means over the seeds, and its 95% interval from resampling the
// seeds with replacement (both variants on the same resampled seeds, so
// that what the seeds share cancels out). The resampling is seeded: the
// same runs give the same interval.
func (c *Comparison) Paired(a, b Variant, f func(Result) float64) Paired {
	xs, ys := c.values(a, f), c.values(b, f)
	return pairedRatio(xs, ys)
}

func (c *Comparison) values(v Variant, f func(Result) float64) []float64 {
	out := make([]float64, len(c.Runs[v]))
	for i, r := range c.Runs[v] {
		out[i] = f(r)
	}
	return out
}

// pairedRatio is sum(xs)/sum(ys) with its percentile bootstrap 95%
// interval over paired resamples of the indices.
func pairedRatio(xs, ys []float64) Paired {
	n := len(xs)
	sum := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s
	}
	p := Paired{Ratio: sum(xs) / sum(ys)}
	if n == 0 {
		return Paired{math.NaN(), math.NaN(), math.NaN()}
	}
	r := rand.New(rand.NewPCG(uint64(n), 0xb0075))
	rs := make([]float64, bootstrapResamples)
	for k := range rs {
		sx, sy := 0.0, 0.0
		for range n {
			i := r.IntN(n)
			sx += xs[i]
			sy += ys[i]
		}
		rs[k] = sx / sy
	}
	slices.Sort(rs)
	p.Lo, p.Hi = rs[int(0.025*bootstrapResamples)], rs[int(0.975*bootstrapResamples)-1]
	return p
}

// String formats the change and its interval in percent: "+12.3% (+10.1, +14.6)".
func (p Paired) String() string {
	if math.IsNaN(p.Ratio) || math.IsInf(p.Ratio, 0) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%% (%+.1f, %+.1f)", 100*(p.Ratio-1), 100*(p.Lo-1), 100*(p.Hi-1))
}

// baseline is what variant v is compared with: the first variant's policy
// under the same re-routing when v's policy differs, else v's policy
// without re-routing, else the first variant.
func (c *Comparison) baseline(v Variant) Variant {
	first := c.Variants[0]
	if v.Allocation != first.Allocation {
		if b := (Variant{first.Allocation, v.Reroute}); slices.Contains(c.Variants, b) {
			return b
		}
	}
	if v.Reroute != 0 {
		if b := (Variant{v.Allocation, 0}); slices.Contains(c.Variants, b) {
			return b
		}
	}
	return first
}

// Markdown writes each variant's mean of every figure over the seeds, then
// each variant's paired change on its baseline with the bootstrap 95%
// interval.
func (c *Comparison) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Means over %d seeds; changes are ratios of means, paired by seed, with bootstrap 95%% intervals.\n\n| figure |", len(c.Seeds))
	for _, v := range c.Variants {
		fmt.Fprintf(w, " %s |", v)
	}
	for _, v := range c.Variants[1:] {
		fmt.Fprintf(w, " %s vs %s |", v, c.baseline(v))
	}
	fmt.Fprint(w, "\n|---|")
	for range 2*len(c.Variants) - 1 {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	for _, f := range figures {
		fmt.Fprintf(w, "| %s |", f.Name)
		for _, v := range c.Variants {
			fmt.Fprintf(w, " "+f.Format+" |", f.Scale*c.Mean(v, f.Of))
		}
		for _, v := range c.Variants[1:] {
			fmt.Fprintf(w, " %s |", c.Paired(v, c.baseline(v), f.Of))
		}
		fmt.Fprintln(w)
	}
}

// WriteCharts writes into dir quotas.svg, revenue.svg and completes.svg:
// each variant's mean quotas filled by their deadline, partner revenue per
// visit and completes per 1,000 visits.
func (c *Comparison) WriteCharts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	charts := map[string]bench.BarChart{
		"quotas.svg":    {Title: "Quotas filled by their deadline (mean of seeds)", Unit: "%"},
		"revenue.svg":   {Title: "Partner revenue per visit (mean of seeds)", Unit: "USD"},
		"completes.svg": {Title: "Completes per 1,000 visits (mean of seeds)", Unit: "per 1,000 visits"},
	}
	figs := map[string]Figure{"quotas.svg": FigQuotas, "revenue.svg": FigRevenue, "completes.svg": FigCompletes}
	for name, ch := range charts {
		f := figs[name]
		for _, v := range c.Variants {
			ch.Bars = append(ch.Bars, bench.Bar{Label: v.String(), Value: f.Scale * c.Mean(v, f.Of)})
		}
		if err := os.WriteFile(filepath.Join(dir, name), ch.SVG(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
