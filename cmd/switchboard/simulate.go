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
// each policy on each seed, medians as a Markdown table on out and, with --out, the table
// (simulate.md) and SVG charts in that directory (docs/allocation.md, "Simulator").
func runSimulate(_ context.Context, args []string, out io.Writer) error {
	f := newFlags("simulate")
	seeds := f.String("seeds", "1,2,3,4,5", "comma-separated seeds, or a count N for seeds 1..N")
	days := f.Int("days", 7, "simulated days")
	campaigns := f.Int("campaigns", 300, "campaigns in the market")
	participants := f.Int("participants", 1000, "panel size (the balanced policy estimates supply from a fixed sample of 1,000 of them)")
	scale := f.Int("scale", 80, "divide every quota target by this (lower: supply shorter)")
	policies := f.String("policies", "greedy,balanced", "comma-separated allocation policies, the first one the baseline")
	reroutes := f.String("reroute", "0,2", "comma-separated reroute_attempts (docs/rules.md §10) to run each policy under, 0..5")
	dir := f.String("out", "", "directory for simulate.md and the SVG charts (empty: table on stdout only)")
	if err := f.parse(args); err != nil {
		return err
	}
	ss, err := parseSeeds(*seeds)
	if err != nil {
		return err
	}
	var ps []engine.Allocation
	for _, p := range strings.Split(*policies, ",") {
		a, err := engine.ParseAllocation(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("--policies: %w", err)
		}
		ps = append(ps, a)
	}
	var rr []int
	for _, p := range strings.Split(*reroutes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 5 {
			return fmt.Errorf("--reroute: %q is not an attempt count 0..5", p)
		}
		rr = append(rr, n)
	}
	if *days < 1 || *campaigns < 1 || *participants < 1 || *scale < 1 {
		return fmt.Errorf("--days, --campaigns, --participants and --scale must be at least 1")
	}
	base := marketsim.Config{Campaigns: *campaigns, Participants: *participants, Days: *days, TargetScale: *scale}
	cmp, err := marketsim.Compare(base, ss, marketsim.Variants(ps, rr), runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "`switchboard simulate --seeds %s --days %d --campaigns %d --participants %d --scale %d --policies %s --reroute %s`\n\n",
		*seeds, *days, *campaigns, *participants, *scale, *policies, *reroutes)
	cmp.Markdown(&b)
	if _, err := out.Write(b.Bytes()); err != nil {
		return err
	}
	if *dir == "" {
		return nil
	}
	if err := cmp.WriteCharts(*dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*dir, "simulate.md"), b.Bytes(), 0o644)
}

// parseSeeds reads --seeds: a list "1,2,3" or a count "5" meaning 1..5.
func parseSeeds(s string) ([]int64, error) {
	if !strings.Contains(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("--seeds %q: want a count 1..1000 or a comma-separated list", s)
		}
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i + 1)
		}
		return out, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds: %q is not a seed", p)
		}
		out = append(out, v)
	}
	return out, nil
}
