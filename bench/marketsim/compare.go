package marketsim

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	Policies []Variant // variants run, in report order
	Runs     map[Variant][]Result
}

// Compare runs base under each variant for each seed, workers runs at a
// time. Each run is independent and deterministic, so the order they run
// in does not change the results.
func Compare(base Config, seeds []int64, variants []Variant, workers int) (*Comparison, error) {
	cmp := &Comparison{Base: base, Seeds: seeds, Policies: variants, Runs: map[Variant][]Result{}}
	for _, a := range variants {
		cmp.Runs[a] = make([]Result, len(seeds))
	}
	type job struct {
		a Variant
		i int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				cfg := base
				cfg.Seed, cfg.Allocation, cfg.RerouteAttempts = seeds[j.i], j.a.Allocation, j.a.Reroute
				r, err := Run(cfg)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				cmp.Runs[j.a][j.i] = r
				mu.Unlock()
			}
		}()
	}
	for i := range seeds {
		for _, a := range variants {
			jobs <- job{a, i}
		}
	}
	close(jobs)
	wg.Wait()
	return cmp, firstErr
}

// metric is one reported figure of a Result.
type metric struct {
	name, format string
	scale        float64
	of           func(Result) float64
}

var metrics = []metric{
	{"completes per 1,000 visits", "%.1f", 1, Result.CompletesPer1000},
	{"campaigns filled by deadline", "%.1f%%", 100, Result.CampaignsFilled},
	{"quotas filled by deadline", "%.1f%%", 100, Result.QuotasFilledShare},
	{"hard-quota completes", "%.0f", 1, func(r Result) float64 { return float64(r.HardCompletes) }},
	{"hard-quota fill", "%.1f%%", 100, Result.HardFill},
	{"terminations per complete", "%.2f", 1, Result.TermsPerComplete},
	{"entered and left with nothing, per 1,000 visits", "%.1f", 1, Result.LeftEmptyPer1000},
	{"re-routed sessions per 1,000 visits", "%.1f", 1, func(r Result) float64 { return 1000 * ratio(r.Rerouted, r.Arrivals) }},
	{"partner revenue per visit", "$%.4f", 1, Result.RevenuePerVisit},
	{"buyer cost per complete", "$%.2f", 1, Result.CostPerComplete},
	{"probe: sessions to 90% of true conversion", "%.0f", 1, func(r Result) float64 { return notReached(float64(r.ProbeSessions)) }},
	{"probe: hours to 90% of true conversion", "%.0f", 1, func(r Result) float64 { return notReached(r.ProbeHours) }},
	{"probe: sessions in the run", "%.0f", 1, func(r Result) float64 { return float64(r.ProbeTotal) }},
	{"probe: sessions until ≥80% of its fair share of offers", "%.0f", 1, func(r Result) float64 { return notReached(float64(r.ProbeFairSessions)) }},
	{"probe: offers shown / fair share, whole run", "%.0f%%", 100, Result.ProbeShareOfFair},
}

// notReached maps the "not within the run" mark (-1) to +Inf, so that a
// median counts it as the longest.
func notReached(v float64) float64 {
	if v < 0 {
		return math.Inf(1)
	}
	return v
}

func (c *Comparison) med(a Variant, f func(Result) float64) float64 {
	xs := make([]float64, 0, len(c.Seeds))
	for _, r := range c.Runs[a] {
		xs = append(xs, f(r))
	}
	return bench.Median(xs)
}

// baseline is what variant v is compared with: the first variant's policy
// under the same re-routing when v's policy differs, else v's policy
// without re-routing, else the first variant.
func (c *Comparison) baseline(v Variant) Variant {
	first := c.Policies[0]
	if v.Allocation != first.Allocation {
		if b := (Variant{first.Allocation, v.Reroute}); slices.Contains(c.Policies, b) {
			return b
		}
	}
	if v.Reroute != 0 {
		if b := (Variant{v.Allocation, 0}); slices.Contains(c.Policies, b) {
			return b
		}
	}
	return first
}

// Markdown writes the medians over seeds as a table (one column per
// variant, then each variant's change on its baseline), then every run's
// figures.
func (c *Comparison) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Medians over %d seeds (%s):\n\n| figure |", len(c.Seeds), joinSeeds(c.Seeds))
	for _, a := range c.Policies {
		fmt.Fprintf(w, " %s |", a)
	}
	for _, a := range c.Policies[1:] {
		fmt.Fprintf(w, " %s vs %s |", a, c.baseline(a))
	}
	fmt.Fprint(w, "\n|---|")
	for range 2*len(c.Policies) - 1 {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, m := range metrics {
		fmt.Fprintf(w, "| %s |", m.name)
		for _, a := range c.Policies {
			if v := c.med(a, m.of); math.IsInf(v, 1) {
				fmt.Fprint(w, " not reached |")
			} else {
				fmt.Fprintf(w, " "+m.format+" |", m.scale*v)
			}
		}
		for _, a := range c.Policies[1:] {
			base, v := c.med(c.baseline(a), m.of), c.med(a, m.of)
			if base != 0 && !math.IsInf(base, 0) && !math.IsInf(v, 0) {
				fmt.Fprintf(w, " %+.1f%% |", 100*(v-base)/base)
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nEvery run:\n\n| seed | variant | visits | completes | completes/1k | campaigns filled | quotas filled | hard completes / target | terms/complete | left with nothing | revenue/visit | cost/complete | probe sessions to 90%% (hours) | probe sessions | probe sessions to 80%% of fair share |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, s := range c.Seeds {
		for _, a := range c.Policies {
			r := c.Runs[a][i]
			fmt.Fprintf(w, "| %d | %s | %d | %d | %.1f | %d / %d | %d / %d | %d / %d | %.2f | %d | $%.4f | $%.2f | %d (%.0f h) | %d | %d |\n",
				s, a, r.Arrivals, r.Completes, r.CompletesPer1000(), r.Filled, r.Due, r.QuotasFilled, r.DueQuotas,
				r.HardCompletes, r.HardTarget, r.TermsPerComplete(), r.LeftEmpty, r.RevenuePerVisit(), r.CostPerComplete(),
				r.ProbeSessions, r.ProbeHours, r.ProbeTotal, r.ProbeFairSessions)
		}
	}
}

func joinSeeds(s []int64) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// WriteCharts writes into dir fill.svg and quotas-full.svg (median share
// of the target completed and of the quotas full at the end of each
// simulated day, per policy), terminations.svg and quotas.svg (median
// terminations per complete and quotas filled by their deadline, per
// variant), completes.svg and left-empty.svg (median completes and visits
// that entered and left with nothing, per 1,000 visits, per variant).
func (c *Comparison) WriteCharts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fill := bench.LineChart{Title: "Target filled over simulated time (median of seeds)", XLabel: "simulated day", YLabel: "share of target completed (%)"}
	full := bench.LineChart{Title: "Quotas full over simulated time (median of seeds)", XLabel: "simulated day", YLabel: "share of quotas full (%)"}
	for _, a := range c.Policies {
		fill.Series = append(fill.Series, c.daily(a, func(r Result) []float64 { return r.Fill }))
		full.Series = append(full.Series, c.daily(a, func(r Result) []float64 { return r.QuotaFill }))
	}
	terms := bench.BarChart{Title: "Terminations per complete (median of seeds)", Unit: "per complete"}
	quotas := bench.BarChart{Title: "Quotas filled by their deadline (median of seeds)", Unit: "%"}
	completes := bench.BarChart{Title: "Completes per 1,000 visits (median of seeds)", Unit: "per 1,000 visits"}
	empty := bench.BarChart{Title: "Visits that entered and left with nothing (median of seeds)", Unit: "per 1,000 visits"}
	for _, a := range c.Policies {
		completes.Bars = append(completes.Bars, bench.Bar{Label: a.String(), Value: c.med(a, Result.CompletesPer1000)})
		empty.Bars = append(empty.Bars, bench.Bar{Label: a.String(), Value: c.med(a, Result.LeftEmptyPer1000)})
		terms.Bars = append(terms.Bars, bench.Bar{Label: a.String(), Value: c.med(a, Result.TermsPerComplete)})
		quotas.Bars = append(quotas.Bars, bench.Bar{Label: a.String(), Value: 100 * c.med(a, Result.QuotasFilledShare)})
	}
	for name, svg := range map[string][]byte{"fill.svg": fill.SVG(), "quotas-full.svg": full.SVG(), "terminations.svg": terms.SVG(), "quotas.svg": quotas.SVG(),
		"completes.svg": completes.SVG(), "left-empty.svg": empty.SVG()} {
		if err := os.WriteFile(filepath.Join(dir, name), svg, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// daily is the policy's median over seeds of a per-day figure, in percent.
func (c *Comparison) daily(a Variant, of func(Result) []float64) bench.Series {
	s := bench.Series{Name: a.String()}
	for d := range c.Base.Days {
		xs := make([]float64, 0, len(c.Seeds))
		for _, r := range c.Runs[a] {
			if v := of(r); d < len(v) {
				xs = append(xs, 100*v[d])
			}
		}
		s.Points = append(s.Points, bench.Point{X: float64(d + 1), Y: bench.Median(xs)})
	}
	return s
}
