package app

import (
	"context"
	"io"
	"sync"
	"time"

	"go.uber.org/zap"
)

// A process's start is a sequence of phases, several of them side by side: the database
// opened and migrated; the snapshot fetched (the time spent waiting on the peer's stream or
// the file) and decoded into the panel; the engine built; the panel loaded, or caught up
// from the snapshot's position; the counters and the quality blocks loaded or caught up;
// the LISTEN on other processes' entries up; ready. Each phase logs one line at info level
// ("start phase": its name, how long it took, when it ended since the start, and the bytes
// and rows it moved), so that an operator sees where a slow start went; App.StartPhases
// returns them.

// StartPhase is one phase of a process's start.
type StartPhase struct {
	Name string
	// Took is the phase's own duration; At is when it ended, since the process began.
	Took, At time.Duration
	Bytes    int64 // bytes it read (0: not counted)
	Rows     int64 // values it loaded (0: not counted)
}

// startPhases records the phases of one process's start.
type startPhases struct {
	log   *zap.Logger
	began time.Time
	mu    sync.Mutex
	list  []StartPhase
}

func newStartPhases(log *zap.Logger) *startPhases {
	return &startPhases{log: log, began: time.Now()}
}

// done records the phase name that took took, ending now, and logs it with extra fields.
func (p *startPhases) done(name string, took time.Duration, bytes, rows int64, extra ...zap.Field) {
	at := time.Since(p.began)
	p.mu.Lock()
	p.list = append(p.list, StartPhase{Name: name, Took: took, At: at, Bytes: bytes, Rows: rows})
	p.mu.Unlock()
	fields := append([]zap.Field{zap.String("phase", name), zap.Duration("took", took.Round(time.Millisecond)),
		zap.Duration("at", at.Round(time.Millisecond)), zap.Int64("bytes", bytes), zap.Int64("rows", rows)}, extra...)
	p.log.Info("start phase", fields...)
}

// since records the phase name that began at began and ends now.
func (p *startPhases) since(name string, began time.Time, bytes, rows int64, extra ...zap.Field) {
	p.done(name, time.Since(began), bytes, rows, extra...)
}

// when records the phase name, begun at began, once loaded is closed (not when ctx ends
// first); rows, when set, is read then.
func (p *startPhases) when(ctx context.Context, name string, began time.Time, loaded <-chan struct{}, rows func() int64) {
	go func() {
		select {
		case <-loaded:
		case <-ctx.Done():
			return
		}
		var n int64
		if rows != nil {
			n = rows()
		}
		p.since(name, began, 0, n)
	}()
}

// phases returns the phases recorded so far, in the order they ended.
func (p *startPhases) phases() []StartPhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]StartPhase(nil), p.list...)
}

// StartPhases returns the phases of this process's start recorded so far, in the order they
// ended: all of them once the process is ready.
func (a *App) StartPhases() []StartPhase { return a.phases.phases() }

// timedReader counts the bytes read through it and the time spent waiting on them: a
// snapshot's fetch (the peer's stream, the file), told apart from its decoding.
type timedReader struct {
	r     io.Reader
	bytes int64
	wait  time.Duration
}

func (t *timedReader) Read(b []byte) (int, error) {
	start := time.Now()
	n, err := t.r.Read(b)
	t.wait += time.Since(start)
	t.bytes += int64(n)
	return n, err
}

// phaseLoad is a load a phase of the start waits for: its name, the channel closed when it
// is in, and, when it holds rows, their count then.
type phaseLoad struct {
	name   string
	loaded <-chan struct{}
	rows   func() int64
}

// timeLoads records the phases of the loads started after it, as they come in (the panel or
// its catch-up from a snapshot, the counters, the quality blocks, the LISTEN on other
// processes' entries, the allocation's first weights, the settled heap), then ready, timed
// since the process began.
func (p *startPhases) timeLoads(ctx context.Context, loads []phaseLoad, ready <-chan struct{}) {
	began := time.Now()
	for _, l := range loads {
		p.when(ctx, l.name, began, l.loaded, l.rows)
	}
	p.when(ctx, "ready", p.began, ready, nil)
}
