package bench

import "time"

// PhaseSummary is one phase in results.json.
type PhaseSummary struct {
	Scenario, Mode, Target         string
	Offered, Throughput            float64
	Requests, Errors, Unsent       uint64
	P50, P90, P99, P999, Max, Mean float64 // milliseconds
	ServerCPUPer1k                 float64
	ServerCPU, PostgresCPU         float64 // seconds
	// ServerWaitingMSPerS is the server process's threads' wait for a core, in
	// milliseconds per second of the phase (Phase.WaitingPerSecond).
	ServerWaitingMSPerS float64 `json:",omitempty"`
	BenchCPU            float64
	RSS, HWM            int64
	Ops                 map[string]uint64
	Status              map[int]uint64
	// AdmittedShare is the share of entry answers that admitted (absent: no entries);
	// AdmittedPerSec and CompletesPerSec are over the measured span.
	AdmittedShare   *float64           `json:",omitempty"`
	AdmittedPerSec  float64            `json:",omitempty"`
	CompletesPerSec float64            `json:",omitempty"`
	Verdicts        map[string]float64 `json:",omitempty"`
	// CacheHitShare is the share of the phase's offers answers the server's answer cache
	// served (absent: no offers, or /metrics not read).
	CacheHitShare *float64 `json:",omitempty"`
	// Repeats are the requests that repeated a participant the phase had asked for (the
	// panel wrapped around), when the scenario counts them.
	Repeats uint64 `json:",omitempty"`
	// Slowest is an open-loop phase's second with the most requests over SlowLatency, on
	// the serve process's clock (absent: none was slow).
	Slowest *SlowSecond `json:",omitempty"`
}

// Summary is results.json: what two runs are compared by.
type Summary struct {
	Started                 time.Time
	Command                 string
	Machine                 Machine
	Campaigns, Participants int
	Duration                string
	Phases                  []PhaseSummary
	Engine                  []EngineResult
	Targets                 []TargetCheck
	Notes                   []string
	// ReadySeconds is the server's time from start to ready; JoinReadySeconds a second
	// process's beside it (0: not measured).
	ReadySeconds, JoinReadySeconds float64
	// JoinReadyFullSeconds is a second process's time to ready with a full load from the
	// database (0: not measured).
	JoinReadyFullSeconds float64 `json:",omitempty"`
	// Year are the operations timed on a year of sessions (bench --past-sessions).
	Year []YearOp `json:",omitempty"`
	// Allocation are the rounds of the paired comparison of the allocation policies (bench
	// --compare-allocation).
	Allocation []AllocationSummary `json:",omitempty"`
	// Binaries are the rounds of the paired comparison with a baseline binary (bench
	// --compare-binary).
	Binaries []BinarySummary `json:",omitempty"`
	// Memory is the serve process's RSS over the run (at most 720 points, each the largest
	// of the samples it stands for), Marks when each phase began, both from its start.
	Memory []MemoryPoint `json:",omitempty"`
	Marks  []MarkPoint   `json:",omitempty"`
	// Maintenance is what autovacuum did to each table during the load phases.
	Maintenance []Maintenance `json:",omitempty"`
	// Sweeps is what the serve process's sweeps cost during the load phases.
	Sweeps *SweepSummary `json:",omitempty"`
}

// BinarySummary is one round of the paired comparison with a baseline binary in
// results.json.
type BinarySummary struct {
	Round           int
	Baseline, This  PhaseSummary
	Throughput, CPU float64 // this / baseline
}

// AllocationSummary is one round of the paired comparison of the allocation policies in
// results.json.
type AllocationSummary struct {
	Round            int
	Greedy, Balanced PhaseSummary
	Throughput, CPU  float64 // balanced / greedy
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func summarize(p *Phase) PhaseSummary {
	s := PhaseSummary{Scenario: p.Scenario, Mode: p.Mode, Target: p.Target, Offered: p.Offered, Throughput: p.Throughput,
		Requests: p.Requests, Errors: p.Errors, Unsent: p.Unsent,
		P50: ms(p.Hist.Quantile(0.5)), P90: ms(p.Hist.Quantile(0.9)), P99: ms(p.Hist.Quantile(0.99)),
		P999: ms(p.Hist.Quantile(0.999)), Max: ms(p.Hist.Max()), Mean: p.Hist.Mean() / 1e6,
		ServerCPUPer1k: p.CPUPer1k(), ServerCPU: p.ServerCPU.Seconds(), PostgresCPU: p.PostgresCPU.Seconds(),
		ServerWaitingMSPerS: p.WaitingPerSecond(), BenchCPU: p.BenchCPU.Seconds(), RSS: p.RSS, HWM: p.HWM, Ops: map[string]uint64{}, Status: p.Status}
	for _, o := range p.Ops {
		if o.Requests > 0 {
			s.Ops[o.Name] = o.Requests
		}
	}
	if share := p.AdmittedShare(); share >= 0 {
		s.AdmittedShare = &share
		s.AdmittedPerSec = p.Rate(p.OpCount(OpEntryAdmitted))
	}
	s.CompletesPerSec = p.Rate(p.OpCount(OpCallbackDone))
	s.Verdicts = p.Verdicts
	if h := p.CacheHitShare(); h >= 0 {
		s.CacheHitShare = &h
	}
	s.Repeats = p.Repeats
	s.Slowest = p.Slowest
	return s
}

// summary is results.json of r, its targets evaluated.
func (r *Report) summary() Summary {
	sum := Summary{Started: r.Started, Command: r.Options.Command, Machine: r.Machine, Campaigns: r.Options.Campaigns,
		Participants: r.Options.Participants, Duration: r.Options.Duration.String(), Engine: r.Engine,
		Targets: r.Targets(), Notes: r.Notes, ReadySeconds: r.Load.Seconds(), JoinReadySeconds: r.JoinReady.Seconds(), JoinReadyFullSeconds: r.JoinReadyFull.Seconds(), Year: r.Year}
	for _, p := range r.Phases {
		sum.Phases = append(sum.Phases, summarize(p))
	}
	for i, a := range r.Allocation {
		sum.Allocation = append(sum.Allocation, AllocationSummary{Round: i + 1, Greedy: summarize(a.Greedy),
			Balanced: summarize(a.Balanced), Throughput: a.Ratio(), CPU: a.CPURatio()})
	}
	for i, b := range r.Binaries {
		sum.Binaries = append(sum.Binaries, BinarySummary{Round: i + 1, Baseline: summarize(b.Baseline),
			This: summarize(b.This), Throughput: b.Ratio(), CPU: b.CPURatio()})
	}
	for _, m := range downsample(r.Memory, 720) {
		sum.Memory = append(sum.Memory, MemoryPoint{Seconds: m.At.Seconds(), MiB: float64(m.RSS) / (1 << 20)})
	}
	for _, m := range r.Marks {
		sum.Marks = append(sum.Marks, MarkPoint{Seconds: m.At.Seconds(), Name: m.Name})
	}
	sum.Maintenance, sum.Sweeps = r.Maintenance, r.Sweeps
	return sum
}
