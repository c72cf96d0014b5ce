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
func (a AllocationRound) Ratio() float64 { return pairRatio(a.pair(), (*Phase).throughput) }

// CPURatio is balanced's server CPU per request over greedy's in the round.
func (a AllocationRound) CPURatio() float64 { return pairRatio(a.pair(), (*Phase).CPUPer1k) }

func (a AllocationRound) pair() [2]*Phase { return [2]*Phase{a.Greedy, a.Balanced} }

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
func (r *Report) AllocationRatios() (throughput, cpu float64) { return pairMedians(r.Allocation) }

// pairMedians are the medians over the rounds of a paired comparison of the throughput and
// CPU ratios, the second child of pair() over the first (rounds without a ratio left out).
func pairMedians[R interface{ pair() [2]*Phase }](rounds []R) (throughput, cpu float64) {
	var ts, cs []float64
	for _, r := range rounds {
		if x := pairRatio(r.pair(), (*Phase).throughput); x > 0 {
			ts = append(ts, x)
		}
		if x := pairRatio(r.pair(), (*Phase).CPUPer1k); x > 0 {
			cs = append(cs, x)
		}
	}
	return Median(ts), Median(cs)
}

// compareAllocation starts a serve child of each policy on the seeded database and runs
// the offers closed loop (random participants) against them in o.CompareAllocation rounds
// (pairedOffers). With o.Profile each child's CPU profile of the last round is written to
// Out/bench/server-cpu-<policy>.pprof.
func compareAllocation(ctx context.Context, o Options, rep *Report, m *Market, dbURL, tmp string, pgPID int) error {
	var opts [2]Options
	for i, policy := range Policies {
		opts[i] = o
		opts[i].Allocation = policy
	}
	return pairedOffers(ctx, o, Policies, opts, o.CompareAllocation, m, dbURL, tmp, pgPID, func(round [2]*Phase) {
		rep.Allocation = append(rep.Allocation, AllocationRound{Greedy: round[0], Balanced: round[1]})
	})
}

// pairedOffers starts a serve child with each of opts on the seeded database (labels name
// them in the progress lines and profiles) and runs the offers closed loop (random
// participants) against them in rounds, the first child first in odd rounds and second in
// even ones, so that a drift of the machine's load falls on both; each round is handed to
// done. Both children are loaded before the first round and stopped after the last. With
// o.Profile each child's CPU profile of the last round is written to
// Out/bench/server-cpu-<label>.pprof.
func pairedOffers(ctx context.Context, o Options, labels [2]string, opts [2]Options, rounds int, m *Market, dbURL, tmp string,
	pgPID int, done func(round [2]*Phase)) error {
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
				_ = copyFile(path, filepath.Join(o.Out, "bench", "server-cpu-"+labels[i]+".pprof"))
			}
		}
	}()
	for i, label := range labels {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		if o.Profile {
			profiles[i] = filepath.Join(tmp, "server-cpu-"+label+".pprof")
		}
		srv, err := startServer(ctx, opts[i], addr, dbURL, profiles[i], filepath.Join(tmp, "server-"+label+".log"))
		if err != nil {
			return fmt.Errorf("%s serve child: %w", label, err)
		}
		defer srv.stop()
		o.progress("%s serve child pid %d on %s loaded in %s", label, srv.pid(), addr, srv.loaded.Round(1e6))
		servers[i], targets[i] = srv, &Target{Addr: addr, PublicURL: "http://" + addr, Market: m}
	}
	for round := range rounds {
		var pair [2]*Phase
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
			last := round == rounds-1 && profiles[i] != ""
			if last {
				servers[i].signal(syscall.SIGUSR1)
			}
			p := measure(client, targets[i].Addr, servers[i].pid(), pgPID, l, targets[i].OffersScenario(ScOffers))
			if last {
				servers[i].signal(syscall.SIGUSR2)
			}
			p.Target = labels[i]
			pair[i] = p
			o.progress("round %d %-8s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  server CPU %.3f s / 1k req  errors %d",
				round+1, labels[i], p.Throughput, p.P(0.5), p.P(0.99), p.CPUPer1k(), p.Errors)
		}
		done(pair)
		o.progress("round %d: %s / %s throughput %.3f, CPU per request %.3f", round+1, labels[1], labels[0],
			pairRatio(pair, (*Phase).throughput), pairRatio(pair, (*Phase).CPUPer1k))
	}
	return nil
}

// pairRatio is f of the round's second child over f of its first (0 when either is
// missing or the first's is not positive).
func pairRatio(pair [2]*Phase, f func(*Phase) float64) float64 {
	if pair[0] == nil || pair[1] == nil || f(pair[0]) <= 0 {
		return 0
	}
	return f(pair[1]) / f(pair[0])
}

func (p *Phase) throughput() float64 { return p.Throughput }
