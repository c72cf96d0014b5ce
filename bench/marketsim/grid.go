package marketsim

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/switchboard/switchboard/engine"
)

// Shape is one named market of the evaluation grid: a Config preset.
type Shape struct {
	Name, About string
	Config      Config
}

// Shapes is the evaluation grid (docs/allocation.md, "Evaluation"). The
// first is the simulator's default market.
var Shapes = []Shape{
	{"balanced", "quotas sized at their buyers' feasibility estimates", Config{}},
	{"supply-short", "quotas at 4 × their feasibility estimates", Config{Demand: 4}},
	{"demand-short", "quotas at 0.3 × their feasibility estimates", Config{Demand: 0.3}},
	{"realistic-quotas", "quotas of 20–2,000 completes, a panel of 20,000", Config{Participants: 20000, QuotaMin: 20, QuotaMax: 2000}},
	{"arrivals", "10 campaigns at the start, 100 arriving during the run", Config{Campaigns: 10, Arriving: 100}},
	{"field-7", "every field period 7 days", Config{FieldMin: 7, FieldMax: 7, Arriving: 60}},
	{"field-14", "every field period 14 days, 14 days run", Config{Days: 14, FieldMin: 14, FieldMax: 14, Arriving: 60}},
	{"field-30", "every field period 30 days, 30 days run", Config{Days: 30, FieldMin: 30, FieldMax: 30, Arriving: 60}},
	{"one-partner", "one supply partner", Config{PartnerShares: []float64{0.6}}},
	{"many-partners", "eight supply partners, shares 0.3–0.8", Config{PartnerShares: []float64{0.3, 0.8, 0.45, 0.65, 0.5, 0.35, 0.75, 0.55}}},
	{"low-conversion", "true conversion 0.2–0.6 × incidence", Config{TruthLow: 0.2, TruthHigh: 0.6}},
	{"high-conversion", "true conversion 1–1.8 × incidence", Config{TruthLow: 1, TruthHigh: 1.8}},
}

// defaultArriving is how many campaigns arrive during a 7-day run of the
// default market: its 60 campaigns in field over a mean field period of 8.5
// days, renewed.
const defaultArriving = 50

func init() {
	for i := range Shapes {
		c := &Shapes[i].Config
		if c.Campaigns == 0 {
			c.Campaigns = 60
		}
		if c.Arriving == 0 {
			c.Arriving = defaultArriving
		}
	}
}

// ShapeByName returns the grid's shape of that name.
func ShapeByName(name string) (Shape, bool) {
	i := slices.IndexFunc(Shapes, func(s Shape) bool { return s.Name == name })
	if i < 0 {
		return Shape{}, false
	}
	return Shapes[i], true
}

// TuningSeeds are the only seeds any constant of an allocation policy may
// be chosen on; EvaluationSeeds are the seeds the evaluation reports and
// nothing is tuned on. The two sets are disjoint and fixed.
var (
	TuningSeeds     = seedRange(1001, 100)
	EvaluationSeeds = seedRange(5001, 100)
)

func seedRange(first int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

// Grid is a policy under test run against its baselines on every seed of
// every shape.
type Grid struct {
	Policy    engine.Allocation
	Baselines []engine.Allocation // greedy first
	Shapes    []Shape
	Seeds     []int64
	Cmp       []*Comparison // by shape
}

// RunGrid runs policy, the baselines (the first is greedy) and policy with
// two re-routing attempts on every seed of every shape, workers runs at a
// time, until ctx is done; progress, when not nil, is called after each
// run.
func RunGrid(ctx context.Context, policy engine.Allocation, baselines []engine.Allocation, shapes []Shape, seeds []int64, workers int, progress func(n, total int)) (*Grid, error) {
	g := &Grid{Policy: policy, Baselines: baselines, Shapes: shapes, Seeds: seeds}
	var vs []Variant
	for _, b := range baselines {
		vs = append(vs, Variant{b, 0})
	}
	vs = append(vs, Variant{policy, 0}, Variant{policy, 2})
	for _, s := range shapes {
		g.Cmp = append(g.Cmp, newComparison(s.Config, seeds, vs))
	}
	return g, runAll(ctx, g.Cmp, workers, progress)
}

// Markdown writes the grid's table: for each shape, greedy's share of the
// quotas left unfilled, then the policy's paired changes on each baseline
// (ratios of means over the seeds with bootstrap 95% intervals), and what
// two re-routing attempts change under the policy; then each variant's
// quotas filled per shape.
func (g *Grid) Markdown(w io.Writer) {
	pol := Variant{g.Policy, 0}
	greedy := Variant{g.Baselines[0], 0}
	fmt.Fprintf(w, "%d seeds per shape (%d–%d). Each cell: the change of %s's mean over the seeds against the baseline's, "+
		"paired by seed, with its bootstrap 95%% interval.\n\n", len(g.Seeds), g.Seeds[0], g.Seeds[len(g.Seeds)-1], g.Policy)
	fmt.Fprintf(w, "| shape | %s: quotas unfilled | quotas filled vs %s | revenue/visit vs %s | completes/1k visits vs %s |", greedy, greedy, greedy, greedy)
	others := g.Baselines[1:]
	for _, b := range others {
		fmt.Fprintf(w, " quotas filled vs %s | revenue/visit vs %s |", b, b)
	}
	fmt.Fprint(w, " reroute 2 vs 0: completes/1k visits |\n|---|--:|--:|--:|--:|")
	fmt.Fprint(w, strings.Repeat("--:|", 2*len(others)+1))
	fmt.Fprintln(w)
	for i, c := range g.Cmp {
		fmt.Fprintf(w, "| %s | %.1f%% | %s | %s | %s |", g.Shapes[i].Name, 100*(1-c.Mean(greedy, FigQuotas.Of)),
			c.Paired(pol, greedy, FigQuotas.Of), c.Paired(pol, greedy, FigRevenue.Of), c.Paired(pol, greedy, FigCompletes.Of))
		for _, b := range others {
			bv := Variant{b, 0}
			fmt.Fprintf(w, " %s | %s |", c.Paired(pol, bv, FigQuotas.Of), c.Paired(pol, bv, FigRevenue.Of))
		}
		fmt.Fprintf(w, " %s |\n", c.Paired(Variant{g.Policy, 2}, pol, FigCompletes.Of))
	}
	fmt.Fprintf(w, "\nMeans over the seeds: quotas filled by their deadline · partner revenue per visit · completes per 1,000 visits.\n\n| shape |")
	vs := g.Cmp[0].Variants
	for _, v := range vs {
		fmt.Fprintf(w, " %s |", v)
	}
	fmt.Fprint(w, "\n|---|"+strings.Repeat("--:|", len(vs))+"\n")
	for i, c := range g.Cmp {
		fmt.Fprintf(w, "| %s |", g.Shapes[i].Name)
		for _, v := range vs {
			fmt.Fprintf(w, " %.1f%% · $%.3f · %.0f |", 100*c.Mean(v, FigQuotas.Of), c.Mean(v, FigRevenue.Of), c.Mean(v, FigCompletes.Of))
		}
		fmt.Fprintln(w)
	}
}
