package persistence

import (
	"errors"
	"sync"
	"time"

	"github.com/switchboard/switchboard/engine/fault"
)

// groupCommit collects concurrent jobs into batches for workers that each commit a batch in
// one transaction (one WAL flush): the machinery the entry and outcome writers share. A
// batch forms from whatever is queued when a worker frees up, waiting up to maxWait for
// company when that is set.
type groupCommit[J any] struct {
	jobs     chan J
	maxBatch int
	maxWait  time.Duration
	run      func(batch []J)
	wg       sync.WaitGroup
	stop     chan struct{}
	once     sync.Once
}

// start launches the workers; run is called with each batch.
func (g *groupCommit[J]) start(cfg EntryWriterConfig, run func(batch []J)) {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	g.jobs, g.maxBatch, g.maxWait, g.run = make(chan J, 4096), cfg.MaxBatch, cfg.MaxWait, run
	g.stop = make(chan struct{})
	for range cfg.Workers {
		g.wg.Add(1)
		go g.work()
	}
}

// errClosed answers jobs offered after close.
var errClosed = errors.New("group-commit writer closed")

// offer queues j unless the writer is closed or done is closed first.
func (g *groupCommit[J]) offer(j J, done <-chan struct{}, doneErr func() error) error {
	select {
	case g.jobs <- j:
		return nil
	case <-g.stop:
		return fault.Unavailable(errClosed)
	case <-done:
		return fault.Unavailable(doneErr())
	}
}

// close stops the workers once the queued jobs are written.
func (g *groupCommit[J]) close() {
	g.once.Do(func() { close(g.stop) })
	g.wg.Wait()
}

func (g *groupCommit[J]) work() {
	defer g.wg.Done()
	batch := make([]J, 0, g.maxBatch)
	for {
		batch = batch[:0]
		select {
		case j := <-g.jobs:
			batch = append(batch, j)
		case <-g.stop:
			for {
				select {
				case j := <-g.jobs:
					g.run([]J{j})
				default:
					return
				}
			}
		}
		var timer <-chan time.Time
		if g.maxWait > 0 {
			timer = time.After(g.maxWait)
		}
	collect:
		for len(batch) < g.maxBatch {
			if timer == nil {
				select {
				case j := <-g.jobs:
					batch = append(batch, j)
				default:
					break collect
				}
				continue
			}
			select {
			case j := <-g.jobs:
				batch = append(batch, j)
			case <-timer:
				break collect
			}
		}
		g.run(batch)
	}
}
