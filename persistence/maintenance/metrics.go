package maintenance

import (
	"sync/atomic"
	"time"

	"github.com/switchboard/switchboard/internal/httpio"
)

// sweepStats is what this process's sweeps cost, for /metrics: how many ran, the time they
// took in all and that of their release of stale sessions (the step that reads sessions),
// and the last one's time. An operator watches them for a sweep that grows with the tables.
type sweepStats struct {
	sweeps              atomic.Int64
	nanos, releaseNanos atomic.Int64
	lastNanos           atomic.Int64
}

// add counts one sweep that took took, release of it in the release.
func (s *sweepStats) add(took, release time.Duration) {
	s.sweeps.Add(1)
	s.nanos.Add(int64(took))
	s.releaseNanos.Add(int64(release))
	s.lastNanos.Store(int64(took))
}

// RegisterMetrics exposes what this process's sweeps cost on m.
func (f *Fleet) RegisterMetrics(m *httpio.Metrics) {
	s := &f.stats
	counter := func(name, help string, v *atomic.Int64, scale float64) {
		m.Gauge(name, "counter", help, func() []httpio.Sample { return []httpio.Sample{{Value: float64(v.Load()) * scale}} })
	}
	counter("switchboard_sweeps_total", "Sweeps this process ran (the processes sharing a database take turns, about one sweep every 30 s between them).", &s.sweeps, 1)
	counter("switchboard_sweep_seconds_total", "Time this process's sweeps took, every step.", &s.nanos, 1e-9)
	counter("switchboard_sweep_release_seconds_total", "Time this process's sweeps spent releasing stale sessions (reading each campaign's sessions from its mark).", &s.releaseNanos, 1e-9)
	m.Gauge("switchboard_sweep_last_duration_seconds", "gauge", "Time the last sweep of this process took.",
		func() []httpio.Sample { return []httpio.Sample{{Value: float64(s.lastNanos.Load()) * 1e-9}} })
}
