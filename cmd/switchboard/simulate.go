package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/bench/marketsim"
	"github.com/switchboard/switchboard/engine"
)

// runSimulate is `switchboard simulate`: the market simulator (bench/marketsim) run under
// each policy on each seed of one market shape, or with --grid the evaluation grid (every
// shape, the policy under test against its baselines); the table goes to out and, with
// --out, into that directory (docs/allocation.md, "Evaluation").
func runSimulate(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("simulate")
	grid := f.Bool("grid", false, "run the evaluation grid: --policy against greedy, edf and balanced (and with --reroute 2) on every shape of --shapes")
	policy := f.String("policy", "bidprice", "with --grid: the policy under test")
	shapes := f.String("shapes", "all", "with --grid: comma-separated shapes, or all")
	shape := f.String("shape", "balanced", "the market shape (a preset of the flags below; names: "+shapeNames()+")")
	seeds := f.String("seeds", "evaluation", "seeds: evaluation or tuning (the fixed sets; docs/allocation.md), evaluation:N or tuning:N for the first N of one, or a comma-separated list")
	days := f.Int("days", 0, "simulated days (0: the shape's)")
	campaigns := f.Int("campaigns", 0, "campaigns in field at the start (0: the shape's)")
	arriving := f.Int("arriving", -1, "campaigns arriving during the run (-1: the shape's)")
	participants := f.Int("participants", 0, "panel size (0: the shape's)")
	demand := f.Float64("demand", 0, "quota targets as a multiple of their buyers' feasibility estimates; above 1 supply is short (0: the shape's)")
	quotaMin := f.Int("quota-min", 0, "fewest completes a quota asks for (0: the shape's)")
	quotaMax := f.Int("quota-max", 0, "most completes a quota asks for (0: the shape's)")
	policies := f.String("policies", "greedy,edf,balanced", "comma-separated allocation policies, the first one the baseline")
	reroutes := f.String("reroute", "0,2", "comma-separated reroute_attempts (docs/rules.md §10) to run each policy under, 0..5")
	dir := f.String("out", "", "directory for simulate.md (or grid.md) and the SVG charts (empty: table on stdout only)")
	if err := f.parse(args); err != nil {
		return err
	}
	ss, err := parseSeeds(*seeds)
	if err != nil {
		return err
	}
	if *days < 0 || *campaigns < 0 || *participants < 0 || *quotaMin < 0 || *quotaMax < 0 || *arriving < -1 || *demand < 0 {
		return fmt.Errorf("--days, --campaigns, --arriving, --participants, --demand, --quota-min and --quota-max must not be negative")
	}
	// The flags given override the shape's (every shape's, with --grid).
	override := func(c marketsim.Config) marketsim.Config {
		for _, o := range []struct {
			v   int
			dst *int
		}{{*days, &c.Days}, {*campaigns, &c.Campaigns}, {*participants, &c.Participants}, {*quotaMin, &c.QuotaMin}, {*quotaMax, &c.QuotaMax}} {
			if o.v > 0 {
				*o.dst = o.v
			}
		}
		if *arriving >= 0 {
			c.Arriving = *arriving
		}
		if *demand > 0 {
			c.Demand = *demand
		}
		return c
	}
	if *grid {
		return runGrid(ctx, *policy, *shapes, ss, override, *dir, args, out)
	}
	sh, ok := marketsim.ShapeByName(*shape)
	if !ok {
		return fmt.Errorf("--shape %q: want one of %s", *shape, shapeNames())
	}
	ps, err := parsePolicies("--policies", *policies)
	if err != nil {
		return err
	}
	var rr []int
	for _, p := range strings.Split(*reroutes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 5 {
			return fmt.Errorf("--reroute: %q is not an attempt count 0..5", p)
		}
		rr = append(rr, n)
	}
	base := override(sh.Config)
	cmp, err := marketsim.Compare(ctx, base, ss, marketsim.Variants(ps, rr), runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	table, err := writeTable(out, args, cmp.Markdown)
	if err != nil || *dir == "" {
		return err
	}
	if err := cmp.WriteCharts(*dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*dir, "simulate.md"), table, 0o644)
}

// writeTable writes to out the command line args (as `switchboard simulate …`) and the
// table render writes, and returns them.
func writeTable(out io.Writer, args []string, render func(io.Writer)) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "`switchboard simulate %s`\n\n", strings.Join(args, " "))
	render(&b)
	_, err := out.Write(b.Bytes())
	return b.Bytes(), err
}

// runGrid is `switchboard simulate --grid`.
func runGrid(ctx context.Context, policy, shapes string, seeds []int64, override func(marketsim.Config) marketsim.Config, dir string, args []string, out io.Writer) error {
	pol, err := engine.ParseAllocation(policy)
	if err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	var baselines []engine.Allocation
	for _, b := range []engine.Allocation{engine.AllocationGreedy, engine.AllocationEDF, engine.AllocationBalanced} {
		if b != pol {
			baselines = append(baselines, b)
		}
	}
	var sh []marketsim.Shape
	for _, n := range strings.Split(shapes, ",") {
		if n = strings.TrimSpace(n); n == "all" {
			sh = append(sh, marketsim.Shapes...)
			continue
		}
		s, ok := marketsim.ShapeByName(n)
		if !ok {
			return fmt.Errorf("--shapes: %q is not a shape (%s)", n, shapeNames())
		}
		sh = append(sh, s)
	}
	for i := range sh {
		sh[i].Config = override(sh[i].Config)
	}
	last := -1
	g, err := marketsim.RunGrid(ctx, pol, baselines, sh, seeds, runtime.GOMAXPROCS(0), func(n, total int) {
		if pct := 100 * n / total; pct/5 != last/5 {
			last = pct
			fmt.Fprintf(os.Stderr, "simulate --grid: %d%% (%d of %d runs)\n", pct, n, total)
		}
	})
	if err != nil {
		return err
	}
	table, err := writeTable(out, args, g.Markdown)
	if err != nil || dir == "" {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "grid.md"), table, 0o644)
}

func parsePolicies(flag, s string) ([]engine.Allocation, error) {
	var ps []engine.Allocation
	for _, p := range strings.Split(s, ",") {
		a, err := engine.ParseAllocation(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		ps = append(ps, a)
	}
	return ps, nil
}

func shapeNames() string {
	var ns []string
	for _, s := range marketsim.Shapes {
		ns = append(ns, s.Name)
	}
	return strings.Join(ns, ", ")
}

// parseSeeds reads --seeds: "evaluation" or "tuning" (marketsim's fixed sets), "evaluation:N"
// or "tuning:N" for the first N of a set, or a list "1,2,3".
func parseSeeds(s string) ([]int64, error) {
	name, count, counted := strings.Cut(s, ":")
	var set []int64
	switch name {
	case "evaluation":
		set = marketsim.EvaluationSeeds
	case "tuning":
		set = marketsim.TuningSeeds
	}
	if set != nil {
		if !counted {
			return set, nil
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > len(set) {
			return nil, fmt.Errorf("--seeds %q: want %s:N with N in 1..%d", s, name, len(set))
		}
		return set[:n], nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds: %q is not a seed (want evaluation, tuning, evaluation:N, tuning:N or a list)", p)
		}
		out = append(out, v)
	}
	return out, nil
}
