package engine

import (
	"sync"
	"sync/atomic"
)

// Engine publishes the current Snapshot to concurrent matchers. Readers load
// it with one atomic read; writers build a new snapshot copy-on-write and
// swap it in, so matching never waits for a rebuild.
type Engine struct {
	snap     atomic.Pointer[Snapshot]
	counters *Counters
	writeMu  sync.Mutex             // serializes Apply so no update is lost
	scratch  sync.Pool              // *scratch, reused across matches
	alloc    *allocator             // allocation policy; nil: greedy (writeMu)
	yield    atomic.Pointer[func()] // called by Load's builds (SetBuildYield); nil: none
}

// New returns an engine with an empty snapshot over counters (a new set when
// nil).
func New(counters *Counters) *Engine {
	if counters == nil {
		counters = NewCounters()
	}
	e := &Engine{counters: counters}
	e.snap.Store(Build(nil, counters))
	return e
}

// Counters returns the live counters the engine matches against.
func (e *Engine) Counters() *Counters { return e.counters }

// Snapshot returns the snapshot matchers currently see.
func (e *Engine) Snapshot() *Snapshot { return e.snap.Load() }

// Load replaces every campaign: it builds a snapshot of campaigns and
// publishes it.
func (e *Engine) Load(campaigns []Campaign) {
	e.writeMu.Lock()
	alloc := e.alloc
	e.writeMu.Unlock()
	var y func()
	if f := e.yield.Load(); f != nil {
		y = *f
	}
	s := build(campaigns, e.counters, alloc, y)
	e.writeMu.Lock()
	if e.alloc == alloc {
		e.snap.Store(s)
	} else { // the policy changed while building
		e.snap.Store(build(campaigns, e.counters, e.alloc, nil))
	}
	e.writeMu.Unlock()
}

// SetBuildYield has Load call f every few hundred campaigns while it builds a snapshot (nil:
// never). A process that starts beside others serving the same machine and database sleeps
// in f, so that its first build (a second of CPU and half a gigabyte of allocation at 100k
// campaigns) does not take a core from their requests all at once.
func (e *Engine) SetBuildYield(f func()) {
	if f == nil {
		e.yield.Store(nil)
		return
	}
	e.yield.Store(&f)
}

// Apply publishes a snapshot in which changed campaigns replace their former
// definitions and removed ones are gone (see Snapshot.With).
func (e *Engine) Apply(changed []Campaign, removed []int64) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.snap.Store(e.snap.Load().With(changed, removed))
}
