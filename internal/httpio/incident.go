package httpio

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultIncidentEvery is how often a lasting incident is counted in the log unless
// ServerConfig.IncidentEvery says otherwise.
const DefaultIncidentEvery = 10 * time.Second

// incidentLog writes a condition that strikes many requests or connections at once (the
// database unavailable, the connection limit reached) as a few lines instead of one per
// occurrence: a warning at its first occurrence, with that occurrence's details; then, every
// interval while it lasts, a warning with the count of occurrences in the interval; and once
// an interval passes without one, an info line that it ended, with the total and how long it
// lasted. A 21 s outage at 400 refused requests a second is four lines, not 8,400. It is safe
// for concurrent use.
type incidentLog struct {
	log   *zap.Logger
	every time.Duration
	// The three messages: constants of the caller.
	started, ongoing, ended string
	// extra, when set, adds fields to the count and end lines (the state of what the
	// incident is about).
	extra func() []zap.Field

	mu     sync.Mutex
	active bool
	since  time.Time
	total  int64 // occurrences of the incident
	recent int64 // occurrences since the last line
	timer  *time.Timer
}

func newIncidentLog(log *zap.Logger, every time.Duration, started, ongoing, ended string) *incidentLog {
	if every <= 0 {
		every = DefaultIncidentEvery
	}
	return &incidentLog{log: log, every: every, started: started, ongoing: ongoing, ended: ended}
}

// occurred records one occurrence. The first of an incident is logged with fields (which
// are built only then: fields is called at most once per incident); the others are counted.
func (l *incidentLog) occurred(fields func() []zap.Field) {
	l.mu.Lock()
	if l.active {
		l.total++
		l.recent++
		l.mu.Unlock()
		return
	}
	l.active, l.since, l.total, l.recent = true, time.Now(), 1, 0
	if l.timer == nil {
		l.timer = time.AfterFunc(l.every, l.tick)
	} else {
		l.timer.Reset(l.every)
	}
	l.mu.Unlock()
	var fs []zap.Field
	if fields != nil {
		fs = fields()
	}
	l.log.Warn(l.started, fs...)
}

// tick writes the count of the interval that just ended, or the end of the incident when
// nothing occurred in it.
func (l *incidentLog) tick() {
	l.mu.Lock()
	if !l.active {
		l.mu.Unlock()
		return
	}
	n, total, lasted := l.recent, l.total, time.Since(l.since)
	l.recent = 0
	if n == 0 {
		l.active = false
	} else {
		l.timer.Reset(l.every)
	}
	l.mu.Unlock()
	fs := []zap.Field{zap.Int64("total", total), zap.Duration("lasted", lasted.Round(time.Millisecond))}
	if l.extra != nil {
		fs = append(fs, l.extra()...)
	}
	if n == 0 {
		l.log.Info(l.ended, fs...)
		return
	}
	l.log.Warn(l.ongoing, append([]zap.Field{zap.Int64("count", n), zap.Duration("interval", l.every)}, fs...)...)
}

// close ends a running incident now, writing its last count and its end (a server shutting
// down).
func (l *incidentLog) close() {
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
	}
	active := l.active
	l.mu.Unlock()
	if active {
		l.tick() // the count of the last interval, if any
		l.tick() // the end
	}
}
