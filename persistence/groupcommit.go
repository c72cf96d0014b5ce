package persistence

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard/switchboard/internal/fault"
)

// groupCommit collects concurrent jobs into batches for workers that each commit a batch in
// one transaction (one WAL flush): the machinery the entry and outcome writers share. A
// batch forms from whatever is queued when a worker frees up; with a cycle set, a worker
// starts at most one batch per cycle, so that at moderate rates a batch waits the rest of
// the cycle for company instead of paying a transaction and a WAL flush for one job.
//
// Jobs are sharded: each worker owns a queue, and a job's key picks the queue. Jobs that lock
// the same rows (one campaign's quota rows) therefore meet in one worker's batches instead of
// queueing for one another's row locks across workers: a hot quota gets one large batch per
// commit instead of several small ones waiting on each other's WAL flush.
type groupCommit[J any] struct {
	queues   []chan J
	maxBatch int
	cycle    time.Duration
	run      func(batch []J)
	wg       sync.WaitGroup
	stop     chan struct{}
	once     sync.Once
	rr       atomic.Uint64 // round robin for jobs without a key

	// mu orders offers against close: an offer that got in is queued before the workers
	// stop (and so is run); one after close is refused.
	mu     sync.RWMutex
	closed bool
}

// start launches the workers; run is called with each batch.
func (g *groupCommit[J]) start(cfg EntryWriterConfig, run func(batch []J)) {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	g.maxBatch, g.cycle, g.run = cfg.MaxBatch, cfg.Cycle, run
	g.stop = make(chan struct{})
	g.queues = make([]chan J, cfg.Workers)
	for i := range g.queues {
		g.queues[i] = make(chan J, 1024)
		g.wg.Add(1)
		go g.work(g.queues[i])
	}
}

// cycleFill is the batch that no longer waits out its cycle (EntryWriterConfig.Cycle): a
// transaction's own cost is then shared eight ways or more, and waiting for more would only
// slow a queue that fills batches by itself.
const cycleFill = 8

// jobDone tells a job's waiter that its batch has decided it. Unlike a closed channel it
// can be used again, so that writers keep their jobs for the next callers (entryJobs,
// outcomeJobs) instead of allocating one per entry: the worker signals once, the waiter
// receives once.
type jobDone chan struct{}

func newJobDone() jobDone { return make(jobDone, 1) }

// signal tells the waiter; the worker must not touch the job afterwards.
func (d jobDone) signal() { d <- struct{}{} }

// wait blocks until the job is decided.
func (d jobDone) wait() { <-d }

// errClosed answers jobs offered after close.
var errClosed = errors.New("group-commit writer closed")

// offer queues j on the worker of key (0: any worker) unless the writer is closed or done
// is closed first.
func (g *groupCommit[J]) offer(key uint64, j J, done <-chan struct{}, doneErr func() error) error {
	if key == 0 {
		key = g.rr.Add(1)
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return fault.Unavailable(errClosed)
	}
	select {
	case g.queues[key%uint64(len(g.queues))] <- j:
		return nil
	case <-done:
		return fault.Unavailable(doneErr())
	}
}

// close stops the workers once the queued jobs are written.
func (g *groupCommit[J]) close() {
	g.once.Do(func() {
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
		close(g.stop)
	})
	g.wg.Wait()
}

func (g *groupCommit[J]) work(jobs chan J) {
	defer g.wg.Done()
	batch := make([]J, 0, g.maxBatch)
	var (
		timer   *time.Timer
		started time.Time // when the last batch went to run
	)
	for {
		batch = batch[:0]
		select {
		case j := <-jobs:
			batch = append(batch, j)
		case <-g.stop:
			for {
				select {
				case j := <-jobs:
					g.run([]J{j})
				default:
					return
				}
			}
		}
		// A batch of fewer than cycleFill jobs starts no sooner than a cycle after the one
		// before it: while commits take longer than that, or jobs queue faster, batches form
		// from what queued meanwhile and nothing waits; when they take less, the jobs of the
		// rest of the cycle join this batch.
		var linger <-chan time.Time
		if g.cycle > 0 {
			if wait := g.cycle - time.Since(started); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				linger = timer.C
			}
		}
	collect:
		for len(batch) < g.maxBatch {
			if linger == nil {
				select {
				case j := <-jobs:
					batch = append(batch, j)
				default:
					break collect
				}
				continue
			}
			if len(batch) >= cycleFill {
				timer.Stop()
				linger = nil
				continue
			}
			select {
			case j := <-jobs:
				batch = append(batch, j)
			case <-linger:
				linger = nil
			}
		}
		if linger != nil {
			timer.Stop()
		}
		started = time.Now()
		g.run(batch)
	}
}
