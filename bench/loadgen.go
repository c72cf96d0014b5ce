package bench

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Scenario is one kind of traffic: Prepare fills the worker's request and names its
// operation (an index into Ops); Check judges the response. Both run on
// the worker's goroutine and must be safe to call from many workers at once.
type Scenario struct {
	Name string
	Ops  []string
	// Prepare returns Exhausted instead of an operation when there is nothing left to send
	// (a scenario that replays what an earlier phase produced): the worker stops.
	Prepare func(w *Worker) int
	// Check returns the operation the request turned out to be (e.g. an entry admitted or
	// refused) and whether it succeeded.
	Check func(w *Worker, op int) (int, bool)
	// Repeats, when set, counts the requests that repeated one the phase had already sent
	// (a panel smaller than the phase wraps around): the phase reports them.
	Repeats func() uint64
}

// Exhausted is what Scenario.Prepare returns when the scenario has nothing left to send.
const Exhausted = -1

// Worker is one load-generating goroutine with its own request, response, random source
// and histograms.
type Worker struct {
	ID   int
	Rand *rand.Rand
	Req  *fasthttp.Request
	Resp *fasthttp.Response
	// Tag is free for the scenario to carry from Prepare to Check.
	Tag int64
	// Buf is scratch space for building requests.
	Buf []byte

	last   time.Time // when the last recorded request completed
	all    *Histogram
	ops    []*Histogram
	errs   []uint64
	status [600]uint64
	// secs are this worker's requests per second of the window, by when they were due.
	secs []Second
	from time.Time // the window's start
}

// Load describes how a scenario is driven.
type Load struct {
	Client *fasthttp.HostClient
	// Workers is the number of concurrent requests (and connections) at most.
	Workers int
	// Duration is the measured window; Warmup runs before it at the same load, unrecorded.
	Duration, Warmup time.Duration
	// Rate > 0: open loop at Rate requests/s on a fixed timeline, latency measured from each
	// request's intended send time. 0: closed loop, each worker sends as soon as its last
	// answer is in.
	Rate float64
	// Timeout bounds one request (default 10 s).
	Timeout time.Duration
	// Seed makes the workers' random choices repeatable.
	Seed uint64
	// Trace, when set, is called on the worker's goroutine after each measured request with
	// its start (the intended send time in the open loop), latency and success: for analyses
	// a histogram cannot give, such as when in the window the slow requests were.
	Trace func(w *Worker, start time.Time, lat time.Duration, ok bool)
}

// OpResult is what one operation of a scenario measured.
type OpResult struct {
	Name     string
	Requests uint64
	Errors   uint64
	Hist     *Histogram `json:"-"`
}

// Result is what one load phase measured.
type Result struct {
	Scenario string
	Mode     string  // "closed" or "open"
	Offered  float64 // requests/s scheduled (open loop)
	Workers  int
	Window   time.Duration // the measured window
	Requests uint64        // answered or failed in the window
	Errors   uint64        // transport errors, unexpected statuses and unsent requests
	// Unsent counts open-loop requests of the window that were still not sent when the phase
	// gave up (latency recorded as the time they had waited).
	Unsent     uint64
	Throughput float64 // answered requests / Span
	// Span is the time from the window's start to its last answer: the window, or longer
	// when an open loop fell behind its schedule, shorter when the scenario ran out.
	Span   time.Duration
	Hist   *Histogram `json:"-"`
	Ops    []OpResult
	Status map[int]uint64
	// Start is when the window began; Seconds are its requests second by second, by when
	// they were due (open loop) or sent (closed loop), so a stall can be placed in the run.
	Start   time.Time
	Seconds []Second
}

// SlowLatency is the latency past which a request counts as slow in Second: the open-loop
// p99 target, so a second's slow count says what it did to that target.
const SlowLatency = TargetP99AtHalf

// Second is the requests of one second of a phase's window.
type Second struct {
	Requests, Slow uint64        // Slow: over SlowLatency
	Max            time.Duration // the slowest
}

func (s *Second) add(lat time.Duration) {
	s.Requests++
	if lat > SlowLatency {
		s.Slow++
	}
	s.Max = max(s.Max, lat)
}

// Slowest returns the index of the second with the most slow requests (ties: the larger
// maximum), -1 when none was slow.
func (r *Result) Slowest() int {
	best := -1
	for i, s := range r.Seconds {
		if s.Slow == 0 {
			continue
		}
		if b := best; b < 0 || s.Slow > r.Seconds[b].Slow || s.Slow == r.Seconds[b].Slow && s.Max > r.Seconds[b].Max {
			best = i
		}
	}
	return best
}

// P returns quantile q of the latency in milliseconds.
func (r *Result) P(q float64) float64 { return float64(r.Hist.Quantile(q)) / 1e6 }

func newWorker(id int, seed uint64, nops int) *Worker {
	w := &Worker{ID: id, Rand: rand.New(rand.NewPCG(seed, uint64(id)+1)), Req: fasthttp.AcquireRequest(),
		Resp: fasthttp.AcquireResponse(), all: NewHistogram()}
	for range nops {
		w.ops = append(w.ops, NewHistogram())
	}
	w.errs = make([]uint64, nops)
	return w
}

func (w *Worker) release() {
	fasthttp.ReleaseRequest(w.Req)
	fasthttp.ReleaseResponse(w.Resp)
}

// do sends one request of s and reports its operation and whether it succeeded; op is
// Exhausted, and nothing sent, when s has nothing left to send.
func (w *Worker) do(l *Load, s *Scenario) (op int, ok bool) {
	w.Req.Reset()
	w.Resp.Reset()
	op = s.Prepare(w)
	if op < 0 {
		return Exhausted, false
	}
	err := l.Client.DoTimeout(w.Req, w.Resp, l.Timeout)
	if err != nil {
		return op, false
	}
	return s.Check(w, op)
}

func (w *Worker) record(l *Load, op int, ok bool, start time.Time) {
	w.last = time.Now()
	lat := w.last.Sub(start)
	if l.Trace != nil {
		l.Trace(w, start, lat, ok)
	}
	w.all.RecordDuration(lat)
	w.ops[op].RecordDuration(lat)
	if i := int(start.Sub(w.from) / time.Second); i >= 0 && i < len(w.secs) {
		w.secs[i].add(lat)
	}
	if !ok {
		w.errs[op]++
	}
	if c := w.Resp.StatusCode(); c > 0 && c < len(w.status) {
		w.status[c]++
	}
}

// Drive drives s as l says and returns what it measured.
func Drive(l Load, s *Scenario) *Result {
	if l.Timeout <= 0 {
		l.Timeout = 10 * time.Second
	}
	if l.Workers <= 0 {
		l.Workers = 1
	}
	d := newDrive(l, s)
	if l.Rate <= 0 {
		d.closedLoop()
	} else {
		d.openLoop()
	}
	d.wg.Wait()
	return d.result()
}

// drive is one phase's load as it runs: its workers and its timeline (a warm-up from start,
// then the measured window from measure to end).
type drive struct {
	l              Load
	s              *Scenario
	workers        []*Worker
	start, measure time.Time
	end            time.Time
	nsecs          int // seconds of the window
	wg             sync.WaitGroup
	unsent         atomic.Uint64
	unsentHist     *Histogram
	unsentMu       sync.Mutex
	exhausted      atomic.Bool // the scenario ran out
}

func newDrive(l Load, s *Scenario) *drive {
	d := &drive{l: l, s: s, workers: make([]*Worker, l.Workers), unsentHist: NewHistogram()}
	for i := range d.workers {
		d.workers[i] = newWorker(i, l.Seed, len(s.Ops))
	}
	d.start = time.Now()
	d.measure = d.start.Add(l.Warmup)
	d.end = d.measure.Add(l.Duration)
	d.nsecs = int((l.Duration + time.Second - 1) / time.Second)
	for _, w := range d.workers {
		w.from, w.secs = d.measure, make([]Second, d.nsecs)
	}
	return d
}

// closedLoop has each worker send its next request as soon as its last is answered, until
// the window ends.
func (d *drive) closedLoop() {
	for _, w := range d.workers {
		d.wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(d.end) {
					return
				}
				if !d.send(w, t0) {
					return
				}
			}
		})
	}
}

// openLoop sends the requests on a fixed timeline at the load's rate, each timed from when
// it was due, whichever worker is free.
func (d *drive) openLoop() {
	interval := float64(time.Second) / d.l.Rate
	total := int64(float64(d.end.Sub(d.start)) / interval)
	// Requests still unsent this long after the window are given up (and counted).
	giveUp := d.end.Add(max(d.l.Duration, 5*time.Second))
	var next atomic.Int64
	for _, w := range d.workers {
		d.wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				intended := d.start.Add(time.Duration(float64(i) * interval))
				now := time.Now()
				if now.After(giveUp) {
					d.giveUp(i, total, interval, now)
					next.Store(total)
					return
				}
				if wait := intended.Sub(now); wait > 0 {
					time.Sleep(wait)
				}
				if !d.send(w, intended) {
					return
				}
			}
		})
	}
}

// send sends w's next request, recorded as sent at at when that is within the window; it
// reports false, nothing sent, when the scenario has run out.
func (d *drive) send(w *Worker, at time.Time) bool {
	op, ok := w.do(&d.l, d.s)
	if op == Exhausted {
		d.exhausted.Store(true)
		return false
	}
	if !at.Before(d.measure) {
		w.record(&d.l, op, ok, at)
	}
	return true
}

// giveUp records every remaining request of the window, i to total, as waited-for until now.
func (d *drive) giveUp(i, total int64, interval float64, now time.Time) {
	d.unsentMu.Lock()
	defer d.unsentMu.Unlock()
	for j := i; j < total; j++ {
		t := d.start.Add(time.Duration(float64(j) * interval))
		if !t.Before(d.measure) {
			d.unsentHist.RecordDuration(now.Sub(t))
			d.unsent.Add(1)
		}
	}
}

// result merges the workers' figures into the phase's, and releases the workers.
func (d *drive) result() *Result {
	l, s := d.l, d.s
	r := &Result{Scenario: s.Name, Mode: "closed", Workers: l.Workers, Window: l.Duration, Hist: NewHistogram(),
		Status: map[int]uint64{}, Start: d.measure, Seconds: make([]Second, d.nsecs)}
	if l.Rate > 0 {
		r.Mode, r.Offered = "open", l.Rate
	}
	for i, name := range s.Ops {
		o := OpResult{Name: name, Hist: NewHistogram()}
		for _, w := range d.workers {
			o.Hist.Merge(w.ops[i])
			o.Errors += w.errs[i]
		}
		o.Requests = o.Hist.Count()
		r.Ops = append(r.Ops, o)
		r.Errors += o.Errors
	}
	last := d.end
	if d.exhausted.Load() {
		last = d.measure // the scenario ran out: the window ends with its last answer
	}
	for _, w := range d.workers {
		if w.last.After(last) {
			last = w.last
		}
		r.Hist.Merge(w.all)
		for i, sec := range w.secs {
			r.Seconds[i].Requests += sec.Requests
			r.Seconds[i].Slow += sec.Slow
			r.Seconds[i].Max = max(r.Seconds[i].Max, sec.Max)
		}
		for c, n := range w.status {
			if n > 0 {
				r.Status[c] += n
			}
		}
		w.release()
	}
	r.Unsent = d.unsent.Load()
	r.Hist.Merge(d.unsentHist)
	r.Errors += r.Unsent
	r.Requests = r.Hist.Count()
	// Answers over the time they took to arrive: the window, or longer when an open loop
	// fell behind its schedule, or shorter when the scenario ran out.
	r.Span = last.Sub(d.measure)
	if r.Span > 0 {
		r.Throughput = float64(r.Requests-r.Unsent) / r.Span.Seconds()
	}
	return r
}
