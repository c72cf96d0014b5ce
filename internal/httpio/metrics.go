package httpio

import (
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency histogram.
var latencyBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// routeStats holds one route's counters; every field is updated with atomics only.
type routeStats struct {
	method, pattern string
	byStatus        [600]atomic.Uint64
	buckets         [len(latencyBuckets) + 1]atomic.Uint64
	sumMicros       atomic.Uint64
}

func (s *routeStats) observe(status int, d time.Duration) {
	if status < 0 || status >= len(s.byStatus) {
		status = 0
	}
	s.byStatus[status].Add(1)
	sec := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets[:], sec)
	s.buckets[i].Add(1)
	s.sumMicros.Add(uint64(d.Microseconds()))
}

// Metrics renders Prometheus text exposition for routes and for whatever gauges and
// counters other packages register.
type Metrics struct {
	mu      sync.Mutex
	routes  []*routeStats
	gauges  []gauge
	started time.Time
}

type gauge struct {
	name, help, kind string
	read             func() []Sample
}

// Sample is one value of a registered metric family, with optional labels in Prometheus
// syntax (`publisher="3"`). Suffix, empty for gauges and counters, names a summary's
// series after the family name: "_sum" and "_count" (its quantiles carry no suffix and a
// quantile label).
type Sample struct {
	Labels string
	Value  float64
	Suffix string
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics { return &Metrics{started: time.Now()} }

func (m *Metrics) route(method, pattern string) *routeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.routes {
		if r.method == method && r.pattern == pattern {
			return r
		}
	}
	r := &routeStats{method: method, pattern: pattern}
	m.routes = append(m.routes, r)
	return r
}

// Gauge registers a metric family read at scrape time; kind is "gauge", "counter" (its name
// ends in _total) or "summary" (samples with Suffix). The names follow Prometheus'
// conventions (base units: _seconds, _bytes); router/metrics_test.go lints a real scrape
// with promlint.
func (m *Metrics) Gauge(name, kind, help string, read func() []Sample) {
	m.mu.Lock()
	m.gauges = append(m.gauges, gauge{name: name, help: help, kind: kind, read: read})
	m.mu.Unlock()
}

// Handler serves the exposition at /metrics.
func (m *Metrics) Handler(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	ctx.Response.SetBodyRaw(m.Append(nil))
}

// Append appends the exposition text to b.
func (m *Metrics) Append(b []byte) []byte {
	m.mu.Lock()
	routes := append([]*routeStats(nil), m.routes...)
	gauges := append([]gauge(nil), m.gauges...)
	m.mu.Unlock()

	b = append(b, "# HELP switchboard_http_requests_total HTTP requests by route and status.\n# TYPE switchboard_http_requests_total counter\n"...)
	for _, r := range routes {
		for status := range r.byStatus {
			n := r.byStatus[status].Load()
			if n == 0 {
				continue
			}
			b = append(b, "switchboard_http_requests_total{method=\""...)
			b = append(b, r.method...)
			b = append(b, "\",route=\""...)
			b = append(b, r.pattern...)
			b = append(b, "\",status=\""...)
			b = strconv.AppendInt(b, int64(status), 10)
			b = append(b, "\"} "...)
			b = strconv.AppendUint(b, n, 10)
			b = append(b, '\n')
		}
	}
	b = append(b, "# HELP switchboard_http_request_duration_seconds HTTP request latency by route.\n# TYPE switchboard_http_request_duration_seconds histogram\n"...)
	for _, r := range routes {
		var cum uint64
		labels := "method=\"" + r.method + "\",route=\"" + r.pattern + "\""
		for i := range r.buckets {
			cum += r.buckets[i].Load()
			le := "+Inf"
			if i < len(latencyBuckets) {
				le = strconv.FormatFloat(latencyBuckets[i], 'g', -1, 64)
			}
			b = append(b, "switchboard_http_request_duration_seconds_bucket{"+labels+",le=\""+le+"\"} "...)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = append(b, "switchboard_http_request_duration_seconds_sum{"+labels+"} "...)
		b = strconv.AppendFloat(b, float64(r.sumMicros.Load())/1e6, 'g', -1, 64)
		b = append(b, "\nswitchboard_http_request_duration_seconds_count{"+labels+"} "...)
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	for _, g := range gauges {
		b = append(b, "# HELP "+g.name+" "+g.help+"\n# TYPE "+g.name+" "+g.kind+"\n"...)
		for _, s := range g.read() {
			b = append(b, g.name...)
			b = append(b, s.Suffix...)
			if s.Labels != "" {
				b = append(b, '{')
				b = append(b, s.Labels...)
				b = append(b, '}')
			}
			b = append(b, ' ')
			b = appendValue(b, s.Value)
			b = append(b, '\n')
		}
	}
	return b
}

// appendValue appends v as the text format spells it: infinities are +Inf and -Inf.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
