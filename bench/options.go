package bench

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
)

// Options configure a run.
type Options struct {
	Campaigns, Participants int
	// Duration is each phase's measured window; Warmup runs before it, unrecorded.
	Duration, Warmup time.Duration
	// Rates are the open-loop rates (requests/s) of the offers and floor phases; empty:
	// RateFractions of the offers closed-loop maximum.
	Rates         []float64
	RateFractions []float64
	// Connections is the closed-loop concurrency; OpenConnections the open-loop one (enough
	// to keep the schedule when the server slows down).
	Connections, OpenConnections int
	// Out is the report directory: Out/performance.md, Out/bench/*.svg, Out/bench/results.json.
	Out string
	// History seeds the participants' past sessions (up to 20 each) as well.
	History bool
	// PastSessions seeds that many sessions of closed campaigns over the eleven months
	// before the history (Market.PastSessions), and the report times the sweeper, exports
	// and insights on them.
	PastSessions int64
	// PartitionDays is the period of the sessions' partitions the seed lays out under a
	// year of sessions (0: 30 days, serve's default).
	PartitionDays int
	// ColdCache leaves a database seeded with PastSessions as the seed left it, rather
	// than reading what a serving database keeps in memory into it first (prewarm).
	ColdCache bool
	// EngineSizes are the market sizes of the in-process match benchmark (none: skipped).
	EngineSizes        []int
	EngineParticipants int
	// Mix is the offers:entries:callbacks proportion of the marketplace scenario.
	Mix [3]int
	// MemoryLimit is the serve child's --memory-limit ("": serve derives its own).
	MemoryLimit string
	// Allocation is the serve child's --allocation ("": serve's default), so that the
	// policies' offer throughput can be compared on the same market.
	Allocation string
	// CompareAllocation is the number of rounds of the paired comparison of the allocation
	// policies (0: none): before the other phases, on the market as seeded, the offers
	// closed loop against a serve child of each policy on the same market, alternately
	// (see compareAllocation).
	CompareAllocation int
	// CompareBinary is a baseline switchboard binary to compare this one with (""; none):
	// before the other phases, the offers closed loop against a serve child of each on the
	// same market, alternately, in CompareRounds rounds (see compareBinary).
	CompareBinary string
	// CompareRounds is the number of rounds of the comparison with CompareBinary (default 6).
	CompareRounds int
	// Binary is the switchboard binary to run `serve` from (default os.Executable()).
	Binary string
	// Profile runs the server through `switchboard bench _serve`, which is `serve` with a
	// CPU profile taken during the offers maximum-throughput phase (Out/bench/server-cpu.pprof).
	Profile bool
	// ProfilePhase is the closed-loop phase the profile covers instead of offers: "entries"
	// or "callbacks" (the write paths' own costs; "" or "offers": the offers phase); or
	// "entries-joining": the second process's profile from its start until it is ready.
	ProfilePhase string
	// profileFromStart starts the server's profile with the process, not on SIGUSR1.
	profileFromStart bool
	// JoinFull also measures a second process that starts with a full load from the database
	// (entries-joining-full), after the one that starts from the first's snapshot
	// (entries-joining).
	JoinFull bool
	// serveArgs are more flags for `serve`.
	serveArgs []string
	// Statements loads pg_stat_statements and writes each phase's costliest statements to
	// the progress output (a diagnosis aid; not in the report).
	Statements bool
	// SharedBuffers is the bench cluster's shared_buffers ("": 256MB, enough for a month of
	// sessions; a year of them wants a production server's quarter of memory).
	SharedBuffers string
	// WALCompression is the bench cluster's wal_compression ("": PostgreSQL's default, off;
	// lz4 or zstd compress the full-page images an insert at a clean index leaf logs).
	WALCompression string
	Seed           int64
	// Command is the command line, for the report.
	Command string
	// Quick marks a tiny run (tests); the report says so.
	Quick    bool
	Log      *zap.Logger
	Progress io.Writer
}

// QuickOptions are the sizes of `bench --quick`.
func QuickOptions(o Options) Options {
	o.Campaigns, o.Participants = 200, 2000
	o.Duration, o.Warmup = time.Second, 200*time.Millisecond
	o.EngineSizes, o.EngineParticipants = []int{200, 1000}, 200
	o.Quick = true
	return o
}

// DefaultOptions are the sizes of a plain `bench`.
func DefaultOptions() Options {
	return Options{
		Campaigns: 10_000, Participants: 200_000,
		Duration: 10 * time.Second, Warmup: 2 * time.Second,
		RateFractions: []float64{0.25, 0.5, 0.75, 0.9},
		Connections:   32, OpenConnections: 128,
		Out:         "docs",
		History:     true,
		EngineSizes: []int{1_000, 10_000, 100_000}, EngineParticipants: 2_000,
		Mix:      [3]int{100, 5, 4},
		Profile:  true,
		Seed:     1,
		JoinFull: true,
	}
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
	}
}
