package mirror

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard/switchboard/internal/httpio"
)

// stats is what one running mirror reports on /metrics.
type stats struct {
	name       string
	listens    bool         // it has a LISTEN connection
	connected  atomic.Bool  // the LISTEN connection is up
	lastReload atomic.Int64 // unix seconds of the last successful reload (full or keyed)
	reloads    atomic.Int64 // successful reloads
}

// running lists the mirrors of this process. It is process-wide, as the runtime metrics are:
// every mirror of the process reports, whoever started it, without the mirror's many owners
// each passing a registry down.
var running struct {
	mu  sync.Mutex
	all []*stats
}

func track(name string, listens bool) *stats {
	s := &stats{name: name, listens: listens}
	running.mu.Lock()
	running.all = append(running.all, s)
	running.mu.Unlock()
	return s
}

func untrack(s *stats) {
	running.mu.Lock()
	running.all = slices.DeleteFunc(running.all, func(x *stats) bool { return x == s })
	running.mu.Unlock()
}

func (s *stats) reloaded() {
	s.reloads.Add(1)
	s.lastReload.Store(time.Now().Unix())
}

// RegisterMetrics adds the mirrors' families to m, labelled mirror="name": whether the
// LISTEN connection is up (a mirror that is down serves what it loaded last and catches up
// on reconnect), when it last reloaded and how often. Mirrors sharing a name (several apps
// in one test binary) are combined: connected is the lowest, the last reload the latest,
// reloads the sum.
func RegisterMetrics(m *httpio.Metrics) {
	samples := func(value func(s *stats) (float64, bool), combine func(a, b float64) float64) func() []httpio.Sample {
		return func() []httpio.Sample {
			running.mu.Lock()
			vals := map[string]float64{}
			for _, s := range running.all {
				v, ok := value(s)
				if !ok {
					continue
				}
				if old, seen := vals[s.name]; seen {
					v = combine(old, v)
				}
				vals[s.name] = v
			}
			running.mu.Unlock()
			names := make([]string, 0, len(vals))
			for n := range vals {
				names = append(names, n)
			}
			slices.Sort(names)
			out := make([]httpio.Sample, len(names))
			for i, n := range names {
				out[i] = httpio.Sample{Labels: "mirror=" + strconv.Quote(n), Value: vals[n]}
			}
			return out
		}
	}
	m.Gauge("switchboard_mirror_listen_connected", "gauge",
		"Whether the mirror's LISTEN connection is up (1) or reconnecting (0); mirrors without one are not listed.",
		samples(func(s *stats) (float64, bool) {
			if !s.listens {
				return 0, false
			}
			if s.connected.Load() {
				return 1, true
			}
			return 0, true
		}, func(a, b float64) float64 { return min(a, b) }))
	m.Gauge("switchboard_mirror_last_reload_timestamp_seconds", "gauge",
		"Unix time of the mirror's last successful reload (full, periodic or of notified keys); 0: none yet.",
		samples(func(s *stats) (float64, bool) { return float64(s.lastReload.Load()), true },
			func(a, b float64) float64 { return max(a, b) }))
	m.Gauge("switchboard_mirror_reloads_total", "counter",
		"Successful reloads of the mirror (full, periodic or of notified keys) by this process.",
		samples(func(s *stats) (float64, bool) { return float64(s.reloads.Load()), true },
			func(a, b float64) float64 { return a + b }))
}
