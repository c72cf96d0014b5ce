package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/switchboard/switchboard/engine"
)

// Policies are the allocation policies a paired comparison runs, in the order of its first
// round.
var Policies = [2]string{engine.AllocationGreedy.String(), engine.AllocationBalanced.String()}

// AllocationRound is one round of the paired comparison of the allocation policies: the
// offers closed loop against a serve child of each policy on the same market, one after the
// other, so that a change of the machine's load between rounds moves both.
type AllocationRound struct {
	Greedy, Balanced *Phase
}

// Ratio is balanced's offers throughput over greedy's in the round.
func (a AllocationRound) Ratio() float64 {
	if a.Greedy == nil || a.Balanced == nil || a.Greedy.Throughput <= 0 {
		return 0
	}
	return a.Balanced.Throughput / a.Greedy.Throughput
}

// CPURatio is balanced's server CPU per request over greedy's in the round.
func (a AllocationRound) CPURatio() float64 {
	if a.Greedy == nil || a.Balanced == nil || a.Greedy.CPUPer1k() <= 0 {
		return 0
	}
	return a.Balanced.CPUPer1k() / a.Greedy.CPUPer1k()
}

// Median is the median of xs (0 when empty); xs is sorted in place. The paired comparisons
// and the market simulator report medians over rounds and seeds.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// AllocationRatios are the medians over the rounds of the throughput and CPU ratios
// (balanced / greedy; 0 when no round ran).
func (r *Report) AllocationRatios() (throughput, cpu float64) {
	var ts, cs []float64
	for _, a := range r.Allocation {
		if x := a.Ratio(); x > 0 {
			ts = append(ts, x)
		}
		if x := a.CPURatio(); x > 0 {
			cs = append(cs, x)
		}
	}
	return Median(ts), Median(cs)
}

// compareAllocation starts a serve child of each policy on the seeded database and runs
// the offers closed loop (random participants) against them in o.CompareAllocation rounds,
// the first policy first in odd rounds and second in even ones (greedy, balanced,
// balanced, greedy, …), so that a drift of the machine's load falls on both. Both
// children are loaded before the first round and stopped after the last. With o.Profile
// each child's CPU profile of the last round is written to
// Out/bench/server-cpu-<policy>.pprof.
func compareAllocation(ctx context.Context, o Options, rep *Report, m *Market, dbURL, tmp string, pgPID int) error {
	var servers [2]*server
	var targets [2]*Target
	var profiles [2]string
	defer func() {
		for i, path := range profiles {
			if path == "" || servers[i] == nil {
				continue
			}
			servers[i].stop() // flushes the profile
			if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
				_ = copyFile(path, filepath.Join(o.Out, "bench", "server-cpu-"+Policies[i]+".pprof"))
			}
		}
	}()
	for i, policy := range Policies {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		po := o
		po.Allocation = policy
		if o.Profile {
			profiles[i] = filepath.Join(tmp, "server-cpu-"+policy+".pprof")
		}
		srv, err := startServer(ctx, po, addr, dbURL, profiles[i], filepath.Join(tmp, "server-"+policy+".log"))
		if err != nil {
			return fmt.Errorf("%s serve child: %w", policy, err)
		}
		defer srv.stop()
		o.progress("%s serve child pid %d on %s loaded in %s", policy, srv.pid(), addr, srv.loaded.Round(1e6))
		servers[i], targets[i] = srv, &Target{Addr: addr, PublicURL: "http://" + addr, Market: m}
	}
	for round := range o.CompareAllocation {
		var a AllocationRound
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			if err := ctx.Err(); err != nil {
				return err
			}
			client := NewClient(targets[i].Addr, o.Connections)
			l := Load{Workers: o.Connections, Duration: o.Duration, Warmup: o.Warmup, Client: client,
				Seed: uint64(o.Seed) + uint64(round)}
			last := round == o.CompareAllocation-1 && profiles[i] != ""
			if last {
				servers[i].signal(syscall.SIGUSR1)
			}
			p := measure(client, targets[i].Addr, servers[i].pid(), pgPID, l, targets[i].OffersScenario(ScOffers))
			if last {
				servers[i].signal(syscall.SIGUSR2)
			}
			p.Target = Policies[i]
			if i == 0 {
				a.Greedy = p
			} else {
				a.Balanced = p
			}
			o.progress("allocation round %d %-8s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  server CPU %.3f s / 1k req  errors %d",
				round+1, Policies[i], p.Throughput, p.P(0.5), p.P(0.99), p.CPUPer1k(), p.Errors)
		}
		rep.Allocation = append(rep.Allocation, a)
		o.progress("allocation round %d: balanced / greedy throughput %.3f, CPU per request %.3f", round+1, a.Ratio(), a.CPURatio())
	}
	return nil
}
