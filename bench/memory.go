package bench

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryEvery is how often the serve process's resident memory is sampled over a run.
const MemoryEvery = 200 * time.Millisecond

// MemorySample is the serve process's resident memory at one moment of the run, with its
// CPU and PostgreSQL's so far (what a stall in a phase can be set against).
type MemorySample struct {
	At  time.Duration // since the process started
	RSS int64         // VmRSS, bytes
	// CPU and PostgresCPU are the serve process's and PostgreSQL's (TreeCPU) CPU so far;
	// PostgresCPU is 0 until the trace knows the postmaster.
	CPU, PostgresCPU time.Duration
	// Waiting is the time the serve process's threads have waited for a core so far
	// (RunQueueWait; 0 when the kernel does not say).
	Waiting time.Duration
}

// RunMark is when something began in the run (a phase, the second process's start), on the
// clock of MemorySample.
type RunMark struct {
	At   time.Duration
	Name string
}

// memoryTrace samples a process's VmRSS until it exits or the trace is finished: the peak
// alone (VmHWM) does not say which part of the run made it.
type memoryTrace struct {
	start time.Time
	stop  chan struct{}
	done  chan struct{}

	postgres atomic.Int64 // the postmaster's pid (0: not known yet)

	mu      sync.Mutex
	samples []MemorySample
	marks   []RunMark
}

// watchPostgres adds the CPU of PostgreSQL (postmaster pid and its backends) to the samples
// from now on.
func (t *memoryTrace) watchPostgres(pid int) {
	if t != nil {
		t.postgres.Store(int64(pid))
	}
}

// traceMemory starts sampling pid, which started at start, every `every`.
func traceMemory(pid int, start time.Time, every time.Duration) *memoryTrace {
	t := &memoryTrace{start: start, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			st := ReadProc(pid)
			if !st.Valid {
				return // the process is gone
			}
			sample := MemorySample{At: time.Since(start), RSS: st.RSS, CPU: st.CPU}
			sample.Waiting, _ = RunQueueWait(pid)
			if pg := t.postgres.Load(); pg > 0 {
				sample.PostgresCPU = TreeCPU(int(pg))
			}
			t.mu.Lock()
			t.samples = append(t.samples, sample)
			t.mu.Unlock()
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// mark notes that name begins now; at says when instead, when it is not zero.
func (t *memoryTrace) mark(name string, at time.Duration) {
	if t == nil {
		return
	}
	if at == 0 {
		at = time.Since(t.start)
	}
	t.mu.Lock()
	t.marks = append(t.marks, RunMark{At: at, Name: name})
	t.mu.Unlock()
}

// finish stops sampling and returns the samples and marks.
func (t *memoryTrace) finish() ([]MemorySample, []RunMark) {
	if t == nil {
		return nil, nil
	}
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.samples, t.marks
}

// downsample keeps at most n samples, the largest of each run of consecutive ones, so that
// a chart or results.json of a long run still shows every peak.
func downsample(s []MemorySample, n int) []MemorySample {
	if n <= 0 || len(s) <= n {
		return s
	}
	out := make([]MemorySample, 0, n)
	for i := range n {
		lo, hi := i*len(s)/n, (i+1)*len(s)/n
		best := s[lo]
		for _, x := range s[lo+1 : hi] {
			if x.RSS > best.RSS {
				best = x
			}
		}
		out = append(out, best)
	}
	return out
}

// memoryPeak returns the largest sample and the last mark at or before it ("" when none).
func memoryPeak(s []MemorySample, marks []RunMark) (MemorySample, string) {
	var peak MemorySample
	for _, x := range s {
		if x.RSS > peak.RSS {
			peak = x
		}
	}
	during := ""
	for _, m := range marks {
		if m.At <= peak.At {
			during = m.Name
		}
	}
	return peak, during
}

// MemoryPoint is one sample of memory over the run in results.json.
type MemoryPoint struct {
	Seconds float64
	MiB     float64
}

// MarkPoint is one mark of the run in results.json.
type MarkPoint struct {
	Seconds float64
	Name    string
}

// memoryChart draws the samples and marks (the 1 GiB target of the 100k-campaign market as
// a dashed line when the run is at that size or its peak comes near it).
func memoryChart(s []MemorySample, marks []RunMark, campaigns int) LineChart {
	rss := Series{Name: "serve RSS", Bare: true}
	for _, x := range downsample(s, 720) {
		rss.Points = append(rss.Points, Point{X: x.At.Seconds(), Y: float64(x.RSS) / (1 << 20)})
	}
	c := LineChart{Title: "Memory of the serve process over the run", XLabel: "seconds since the process started",
		YLabel: "RSS (MiB)", Series: []Series{rss}}
	if peak, _ := memoryPeak(s, nil); len(s) > 0 && (campaigns >= 100_000 || peak.RSS > TargetRSS/2) {
		end := s[len(s)-1].At.Seconds()
		c.Series = append(c.Series, Series{Name: fmt.Sprintf("target %s", mib(TargetRSS)), Dashed: true, Bare: true,
			Points: []Point{{X: 0, Y: TargetRSS / (1 << 20)}, {X: end, Y: TargetRSS / (1 << 20)}}})
	}
	for _, m := range marks {
		c.Marks = append(c.Marks, Mark{X: m.At.Seconds(), Label: m.Name})
	}
	return c
}

// cpuBetween returns the serve process's and PostgreSQL's CPU, in cores, over the samples
// that span [from, to): the first sample at or before from to the first at or after to
// (ok false when the samples do not span it, or PostgreSQL was not watched yet).
func cpuBetween(s []MemorySample, from, to time.Duration) (serve, postgres float64, ok bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].At > from }) - 1
	j := sort.Search(len(s), func(j int) bool { return s[j].At >= to })
	if i < 0 || j >= len(s) || s[i].PostgresCPU == 0 {
		return 0, 0, false
	}
	span := (s[j].At - s[i].At).Seconds()
	return (s[j].CPU - s[i].CPU).Seconds() / span, (s[j].PostgresCPU - s[i].PostgresCPU).Seconds() / span, true
}

// waitingBetween returns the time the serve process's threads waited for a core over the
// samples that span [from, to), in milliseconds per second, as cpuBetween spans them (ok
// false when the samples do not span it or carry no waits, or when the sum fell: a thread
// that exits takes its wait out of it, as the process's do while it stops).
func waitingBetween(s []MemorySample, from, to time.Duration) (msPerSecond float64, ok bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].At > from }) - 1
	j := sort.Search(len(s), func(j int) bool { return s[j].At >= to })
	if i < 0 || j >= len(s) || s[j].Waiting == 0 || s[j].Waiting < s[i].Waiting {
		return 0, false
	}
	return float64((s[j].Waiting - s[i].Waiting).Microseconds()) / 1e3 / (s[j].At - s[i].At).Seconds(), true
}
