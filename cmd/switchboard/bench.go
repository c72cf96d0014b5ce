package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"

	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/bench"
	"github.com/switchboard/switchboard/engine"
)

// runBench is `switchboard bench`: the load generator and engine benchmarks (bench/README.md).
// Two internal modes serve the run's child processes: `bench _serve` (serve with a CPU
// profile switched by signals) and `bench _floor` (the floor server).
func runBench(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "_serve":
			return runBenchServe(ctx, args[1:], out)
		case "_floor":
			return runBenchFloor(ctx, args[1:])
		}
	}
	o, err := benchOptions(args)
	if err != nil {
		return err
	}
	o.Command = "switchboard " + strings.Join(append([]string{"bench"}, args...), " ")
	o.Progress = os.Stderr
	log := newLogger()
	defer log.Sync() //nolint:errcheck
	if os.Getenv("SWITCHBOARD_LOG_LEVEL") == "" {
		// The bench prints its own progress; the libraries' info logs would drown it.
		log = log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))
	}
	o.Log = log.Named("bench")
	_, err = bench.Run(ctx, o)
	return err
}

// benchLists are the flags of `bench` that are parsed after the others: lists, and the
// quick sizes that explicit flags override.
type benchLists struct {
	rates, engineSizes, mix *string
	quick                   *bool
}

// benchOptions reads the options of a run from `bench`'s flags and checks them.
func benchOptions(args []string) (bench.Options, error) {
	o := bench.DefaultOptions()
	f := newFlags("bench")
	lists := benchFlags(f, &o)
	if err := f.parse(args); err != nil {
		return o, err
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if *lists.quick {
		o = quickOptions(o, given)
	}
	if err := parseRates(&o, *lists.rates); err != nil {
		return o, err
	}
	if !*lists.quick || given["engine-sizes"] {
		if err := parseEngineSizes(&o, *lists.engineSizes); err != nil {
			return o, err
		}
	}
	if err := checkBenchChoices(o); err != nil {
		return o, err
	}
	if err := parseMix(&o, *lists.mix); err != nil {
		return o, err
	}
	if o.Mix[0]+o.Mix[1]+o.Mix[2] == 0 || o.Campaigns <= 0 || o.Participants <= 0 || o.Duration <= 0 || o.Connections <= 0 {
		return o, errors.New("--mix, --campaigns, --participants, --duration and --connections must be positive")
	}
	return o, nil
}

// benchFlags declares `bench`'s flags into o and returns those parsed afterwards.
func benchFlags(f flags, o *bench.Options) benchLists {
	var l benchLists
	f.IntVar(&o.Campaigns, "campaigns", o.Campaigns, "active campaigns in the synthetic market (e.g. 1000, 10000, 100000)")
	f.IntVar(&o.Participants, "participants", o.Participants, "impaneled participants")
	f.DurationVar(&o.Duration, "duration", o.Duration, "measured window of each load phase")
	f.DurationVar(&o.Warmup, "warmup", o.Warmup, "unmeasured warm-up before each phase")
	l.rates = f.String("rates", "", "comma-separated open-loop rates (req/s) for offers and the floor (default: 25,50,75,90% of the offers maximum)")
	f.IntVar(&o.Connections, "connections", o.Connections, "closed-loop connections (concurrent requests)")
	f.IntVar(&o.OpenConnections, "open-connections", o.OpenConnections, "open-loop connections at most")
	f.StringVar(&o.Out, "out", o.Out, "report directory: performance.md, bench/*.svg, bench/results.json")
	l.quick = f.Bool("quick", false, "a tiny run for tests: 200 campaigns, 2,000 participants, 1 s phases")
	f.BoolVar(&o.History, "history", o.History, "seed the participants' past sessions too")
	f.Int64Var(&o.PastSessions, "past-sessions", 0, "also seed this many sessions of closed campaigns over the eleven months before the history (e.g. 100000000: a year of a marketplace), and time the sweeper, exports and insights on them")
	f.BoolVar(&o.ColdCache, "cold-cache", false, "with --past-sessions, measure the database as the seed left it, without first reading what a serving database keeps in memory (the active months' session indexes, respondents) into it with pg_prewarm")
	f.IntVar(&o.PartitionDays, "partition-days", 30, "with --past-sessions, the period of the sessions' partitions in days (serve's --session-partition-period sizes them; a month by default)")
	l.engineSizes = f.String("engine-sizes", "1000,10000,100000", "campaign counts of the in-process match benchmark (empty: skip)")
	f.BoolVar(&o.JoinFull, "join-full", o.JoinFull, "after the joining phase whose second process starts from the first's snapshot, run one whose second process loads everything from PostgreSQL (entries-joining-full)")
	f.BoolVar(&o.Profile, "profile", o.Profile, "take a server CPU profile during the offers maximum-throughput phase")
	f.StringVar(&o.ProfilePhase, "profile-phase", "offers", "the closed-loop phase --profile covers: offers, entries or callbacks; or entries-joining: the second process's start, until it is ready")
	f.StringVar(&o.SharedBuffers, "shared-buffers", "256MB", "shared_buffers of the bench's PostgreSQL cluster (e.g. 6GB: a quarter of this machine's memory, as a production server would have)")
	f.StringVar(&o.WALCompression, "wal-compression", "", "wal_compression of the bench's PostgreSQL cluster (e.g. lz4; default PostgreSQL's, off)")
	f.BoolVar(&o.Statements, "statements", false, "log each phase's costliest PostgreSQL statements (pg_stat_statements)")
	f.StringVar(&o.Binary, "binary", "", "switchboard binary to run serve from (default: this one)")
	f.StringVar(&o.CompareBinary, "compare-binary", "", "before the other phases (on the market as seeded), rounds of offers against a serve child of this baseline binary and one of this binary on the same market, alternately (same schema; default: none)")
	f.IntVar(&o.CompareRounds, "compare-rounds", 6, "rounds of the --compare-binary comparison")
	f.StringVar(&o.MemoryLimit, "memory-limit", "", "--memory-limit of the serve child, e.g. 3GiB or off (default: serve's own, 80% of the cgroup's or machine's memory)")
	f.StringVar(&o.Allocation, "allocation", "", "--allocation of the serve child: greedy or balanced (default: serve's own)")
	f.IntVar(&o.CompareAllocation, "compare-allocation", 0, "before the other phases (on the market as seeded), rounds of offers against a greedy and a balanced serve child on the same market, alternately (0: none)")
	l.mix = f.String("mix", "100:5:4", "offers:entries:callbacks proportion of the mix scenario")
	f.Int64Var(&o.Seed, "seed", o.Seed, "seed of the synthetic market and the load")
	return l
}

// quickOptions are the sizes of `bench --quick`, but for those given explicitly.
func quickOptions(o bench.Options, given map[string]bool) bench.Options {
	q := bench.QuickOptions(o)
	for name, apply := range map[string]func(){
		"campaigns": func() { q.Campaigns = o.Campaigns }, "participants": func() { q.Participants = o.Participants },
		"duration": func() { q.Duration = o.Duration }, "warmup": func() { q.Warmup = o.Warmup },
	} {
		if given[name] {
			apply()
		}
	}
	if given["engine-sizes"] {
		q.EngineSizes = nil
	}
	return q
}

// parseRates reads --rates into o.Rates.
func parseRates(o *bench.Options, rates string) error {
	if rates == "" {
		return nil
	}
	for _, s := range strings.Split(rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || r <= 0 {
			return fmt.Errorf("--rates: %q is not a positive rate", s)
		}
		o.Rates = append(o.Rates, r)
	}
	return nil
}

// parseEngineSizes reads --engine-sizes into o.EngineSizes.
func parseEngineSizes(o *bench.Options, sizes string) error {
	o.EngineSizes = nil
	for _, s := range strings.Split(sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("--engine-sizes: %q is not a campaign count", s)
		}
		o.EngineSizes = append(o.EngineSizes, n)
	}
	return nil
}

// parseMix reads --mix into o.Mix.
func parseMix(o *bench.Options, mix string) error {
	parts := strings.Split(mix, ":")
	if len(parts) != 3 {
		return errors.New("--mix must be offers:entries:callbacks, e.g. 100:5:4")
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return fmt.Errorf("--mix: %q is not a count", p)
		}
		o.Mix[i] = n
	}
	return nil
}

// checkBenchChoices refuses a profiled phase, an allocation policy, a partition period or
// a number of comparison rounds a run cannot take.
func checkBenchChoices(o bench.Options) error {
	switch o.ProfilePhase {
	case bench.ScOffers, bench.ScEntries, bench.ScCallbacks, bench.ScEntriesJoining:
	default:
		return fmt.Errorf("--profile-phase: %q is not offers, entries, callbacks or entries-joining", o.ProfilePhase)
	}
	if o.Allocation != "" {
		if _, err := engine.ParseAllocation(o.Allocation); err != nil {
			return fmt.Errorf("--allocation: %w", err)
		}
	}
	if o.PartitionDays <= 0 {
		return errors.New("--partition-days must be a positive number of days")
	}
	if o.CompareAllocation < 0 {
		return errors.New("--compare-allocation must be a number of rounds, 0 or more")
	}
	return nil
}

// runBenchSizes is `switchboard bench sizes --results A,B,...`: the table of offers against
// the floor and peak memory by market size (printed as Markdown) and its chart.
func runBenchSizes(_ context.Context, args []string, out io.Writer) error {
	f := newFlags("bench sizes")
	results := f.String("results", "", "comma-separated bench/results.json of earlier runs at several --campaigns")
	chart := f.String("chart", "docs/bench/sizes.svg", "where to write the chart of offers against the floor by market size")
	if err := f.parse(args); err != nil {
		return err
	}
	var paths []string
	for _, p := range strings.Split(*results, ",") {
		if p = strings.TrimSpace(p); p != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return errors.New("--results: give the bench/results.json of one run or more")
	}
	rows, err := bench.ReadSizes(paths)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*chart, bench.SizesChart(rows).SVG(), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(out, bench.SizesMarkdown(rows))
	return err
}

// runBenchServe is `serve` (the same function, the same flags after "--") with a CPU profile
// written to --cpu-profile between a SIGUSR1 (or the start, with --cpu-profile-from-start)
// and a SIGUSR2 (or the end of the process).
func runBenchServe(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("bench _serve")
	path := f.String("cpu-profile", "", "where to write the CPU profile")
	fromStart := f.Bool("cpu-profile-from-start", false, "start the profile with the process, not on SIGUSR1")
	i := 0
	for i < len(args) && args[i] != "--" {
		i++
	}
	if err := f.parse(args[:i]); err != nil {
		return err
	}
	rest := args[min(i+1, len(args)):]
	if len(rest) == 0 || rest[0] != "serve" {
		return errors.New("usage: switchboard bench _serve --cpu-profile P -- serve [flags]")
	}
	var mu sync.Mutex
	var file *os.File
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if file != nil {
			pprof.StopCPUProfile()
			file.Close()
			file = nil
		}
	}
	sigs := make(chan os.Signal, 2)
	if *fromStart {
		sigs <- syscall.SIGUSR1
	}
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			if s == syscall.SIGUSR2 {
				stop()
				continue
			}
			mu.Lock()
			if file == nil && *path != "" {
				if fl, err := os.Create(*path); err == nil {
					if pprof.StartCPUProfile(fl) == nil {
						file = fl
					} else {
						fl.Close()
					}
				}
			}
			mu.Unlock()
		}
	}()
	defer stop()
	return runServe(ctx, rest[1:], out)
}

// runBenchFloor serves the floor: a fixed JSON body for every request.
func runBenchFloor(ctx context.Context, args []string) error {
	f := newFlags("bench _floor")
	addr := f.String("addr", "127.0.0.1:0", "listen address")
	size := f.Int("bytes", 2500, "body size")
	inherited := f.Bool("inherited-listener", false, "serve on the listening socket passed as file descriptor 3 (--addr is ignored)")
	if err := f.parse(args); err != nil {
		return err
	}
	var ln net.Listener
	var err error
	if *inherited {
		ln, err = net.FileListener(os.NewFile(3, "floor listener"))
	} else {
		ln, err = net.Listen("tcp", *addr)
	}
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); time.Sleep(10 * time.Millisecond); ln.Close() }()
	err = bench.ServeFloor(ln, bench.FloorBody(*size))
	if ctx.Err() != nil {
		return nil
	}
	return err
}
