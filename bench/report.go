package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Markers delimit the generated section of performance.md; text outside them is kept.
const (
	MarkerStart = "<!-- bench:start -->"
	MarkerEnd   = "<!-- bench:end -->"
)

// Report is everything a run measured.
type Report struct {
	Options     Options
	Machine     Machine
	Started     time.Time
	Took        time.Duration
	Seed        SeedStats
	Prewarm     Prewarm // zero: nothing read before the load
	Harvest     *Harvest
	Phases      []*Phase
	Engine      []EngineResult
	ServerRSS   int64 // after loading, before load
	ServerHWM   int64 // peak over the run
	Load        time.Duration
	Notes       []string // what could not be measured, and why
	Profile     string   // path of the server CPU profile, when taken
	FloorSize   int
	EntriesUsed int64 // entry URLs followed, each once
	// JoinReady is how long a second serve process took to be ready beside the loaded one
	// (0: not measured).
	JoinReady time.Duration
	// JoinCPU is the CPU time the second process spent from its start until ready: what its
	// start took from the cores it shares with the first.
	JoinCPU time.Duration
	// JoinReadyFull and JoinCPUFull are JoinReady and JoinCPU of a second process that
	// loaded from the database (Options.JoinFull; 0: not measured).
	JoinReadyFull, JoinCPUFull time.Duration
	// ProfilePhase is the scenario whose closed-loop phase the profile covers.
	ProfilePhase string
	// Year are the sweeper steps, exports and insights reads timed after the load on a
	// database seeded with Options.PastSessions (nil: none seeded).
	Year []YearOp
	// Allocation are the rounds of the paired comparison of the allocation policies
	// (Options.CompareAllocation; nil: not run).
	Allocation []AllocationRound
	// Binaries are the rounds of the paired comparison with a baseline binary
	// (Options.CompareBinary; nil: not run).
	Binaries []BinaryRound
	// Memory is the serve process's RSS sampled every MemoryEvery from its start to its
	// stop; Marks say when each phase (and the other steps of the run) began.
	Memory []MemorySample
	Marks  []RunMark
	// Maintenance is what autovacuum did to each table during the load phases.
	Maintenance []Maintenance
	// Sweeps is what the serve process's sweeps cost during the load phases (nil: its
	// /metrics not read).
	Sweeps *SweepSummary
}

// SweepSummary is the serve process's sweeps over a stretch of the run, from its /metrics:
// how many, their time in all and the part of it releasing stale sessions.
type SweepSummary struct {
	Count                   int64
	Seconds, ReleaseSeconds float64
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Find returns the phase of scenario and mode (and offered rate for open loop, 0: any).
func (r *Report) Find(scenario, mode string) *Phase {
	for _, p := range r.Phases {
		if p.Scenario == scenario && p.Mode == mode {
			return p
		}
	}
	return nil
}

// WriteReport writes out/performance.md (between the markers), out/bench/*.svg and
// out/bench/results.json.
func WriteReport(out string, r *Report) error {
	dir := filepath.Join(out, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	charts := map[string][]byte{}
	md := r.Markdown(charts)
	for name, b := range charts {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(r.summary(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return ReplaceSection(filepath.Join(out, "performance.md"), md)
}

// ReplaceSection puts section between the markers of the file at path, creating the file
// (or appending the markers) when needed; everything outside the markers is kept.
func ReplaceSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	if len(old) == 0 {
		doc = "# Performance\n\nMeasured by `make bench` (`switchboard bench`, see bench/README.md).\n\n" +
			MarkerStart + "\n" + MarkerEnd + "\n"
	}
	i, j := strings.Index(doc, MarkerStart), strings.Index(doc, MarkerEnd)
	if i < 0 || j < i {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + MarkerStart + "\n" + MarkerEnd + "\n"
		i, j = strings.Index(doc, MarkerStart), strings.Index(doc, MarkerEnd)
	}
	doc = doc[:i+len(MarkerStart)] + "\n" + strings.TrimSpace(section) + "\n" + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
