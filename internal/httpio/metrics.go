package httpio

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency histogram.
var latencyBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// routeStats holds one route's request counts by status and its latency histogram. Every
// request updates them, so they are plain atomics, three adds a request: client_golang's
// counter and histogram cost twice as much, about 60 ns more a request, over 1% of a
// cached offers answer (BenchmarkMux/observe). routeCollector hands them to the registry
// at scrape time.
type routeStats struct {
	method, pattern string
	byStatus        [600]atomic.Uint64
	buckets         [len(latencyBuckets) + 1]atomic.Uint64
	sumNanos        atomic.Uint64
}

func (s *routeStats) observe(status int, d time.Duration) {
	if status < 0 || status >= len(s.byStatus) {
		status = 0
	}
	s.byStatus[status].Add(1)
	s.buckets[sort.SearchFloat64s(latencyBuckets[:], d.Seconds())].Add(1)
	s.sumNanos.Add(uint64(max(d, 0)))
}

// routeCollector exposes every route's statistics as switchboard_http_requests_total
// (by method, route and status; a status no request got has no sample) and
// switchboard_http_request_duration_seconds (by method and route, from the route's
// registration on).
type routeCollector struct {
	m                 *Metrics
	requests, latency *prometheus.Desc
}

// Describe sends the two families' descriptors.
func (c *routeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.latency
}

// Collect reads every route's atomics.
func (c *routeCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	routes := slices.Collect(maps.Values(c.m.routes))
	c.m.mu.Unlock()
	for _, r := range routes {
		for status := range r.byStatus {
			if n := r.byStatus[status].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(n), r.method, r.pattern, strconv.Itoa(status))
			}
		}
		buckets := make(map[float64]uint64, len(latencyBuckets))
		var count uint64
		for i := range r.buckets {
			count += r.buckets[i].Load()
			if i < len(latencyBuckets) {
				buckets[latencyBuckets[i]] = count
			}
		}
		ch <- prometheus.MustNewConstHistogram(c.latency, count, float64(r.sumNanos.Load())/1e9, buckets, r.method, r.pattern)
	}
}

// Metrics is the process's Prometheus registry: the request counter and latency histogram
// the mux records into, the families other packages register with Gauge, and the Go
// runtime's and the process's own (RegisterRuntime).
type Metrics struct {
	reg     *prometheus.Registry
	runtime *prometheus.Registry

	mu      sync.Mutex
	routes  map[[2]string]*routeStats
	sampled []*sampled
}

// Sample is one value of a family registered with Gauge, with optional labels in
// Prometheus syntax (`publisher="3"`, `a="1",b="2"`).
type Sample struct {
	Labels string
	Value  float64
}

// NewMetrics returns a registry holding the request counter and latency histogram.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), runtime: prometheus.NewRegistry(), routes: map[[2]string]*routeStats{}}
	m.reg.MustRegister(&routeCollector{m: m,
		requests: prometheus.NewDesc("switchboard_http_requests_total", "HTTP requests by route and status.",
			[]string{"method", "route", "status"}, nil),
		latency: prometheus.NewDesc("switchboard_http_request_duration_seconds", "HTTP request latency by route.",
			[]string{"method", "route"}, nil)})
	return m
}

// route returns the statistics of method and pattern; its latency histogram is exposed from
// here on, before the route's first request.
func (m *Metrics) route(method, pattern string) *routeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]string{method, pattern}
	if r := m.routes[key]; r != nil {
		return r
	}
	r := &routeStats{method: method, pattern: pattern}
	m.routes[key] = r
	return r
}

// Gauge registers a metric family read at scrape time; kind is "gauge" or "counter" (its
// name ends in _total). The names follow Prometheus' conventions (base units: _seconds,
// _bytes); router/metrics_test.go lints a real scrape with promlint.
func (m *Metrics) Gauge(name, kind, help string, read func() []Sample) {
	t := prometheus.GaugeValue
	switch kind {
	case "gauge":
	case "counter":
		t = prometheus.CounterValue
	default:
		panic("httpio: metric " + name + " of unknown kind " + kind)
	}
	c := &sampled{name: name, help: help, kind: t, read: read}
	m.reg.MustRegister(c)
	m.mu.Lock()
	m.sampled = append(m.sampled, c)
	m.mu.Unlock()
}

// sampled is a family registered with Gauge, a collector of constant metrics read at
// scrape time. It describes nothing (an unchecked collector): its samples' label names
// vary from one sample to the next.
type sampled struct {
	name, help string
	kind       prometheus.ValueType
	read       func() []Sample
}

// Describe sends nothing: the registry checks sampled's metrics when it gathers them.
func (c *sampled) Describe(chan<- *prometheus.Desc) {}

// Collect reads the samples and sends each as a constant metric.
func (c *sampled) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.read() {
		names, values, err := parseLabels(s.Labels)
		desc := prometheus.NewDesc(c.name, c.help, names, nil)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(desc, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(desc, c.kind, s.Value, values...)
	}
}

// parseLabels splits labels in Prometheus syntax (`a="1",b="x\"y"`) into names and values.
func parseLabels(labels string) (names, values []string, err error) {
	for rest := labels; rest != ""; {
		name, after, ok := strings.Cut(rest, `="`)
		if !ok {
			return nil, nil, fmt.Errorf("labels %q: no =\" after %q", labels, rest)
		}
		var v strings.Builder
		i := 0
		for ; i < len(after) && after[i] != '"'; i++ {
			if after[i] == '\\' && i+1 < len(after) {
				i++
				if after[i] == 'n' {
					v.WriteByte('\n')
					continue
				}
			}
			v.WriteByte(after[i])
		}
		if i == len(after) {
			return nil, nil, fmt.Errorf("labels %q: unterminated value of %s", labels, name)
		}
		names, values = append(names, name), append(values, v.String())
		rest = strings.TrimPrefix(after[i+1:], ",")
	}
	return names, values, nil
}

// Handler serves the exposition at /metrics.
func (m *Metrics) Handler(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	ctx.Response.SetBodyRaw(m.Append(nil))
}

// Append appends the exposition in Prometheus' text format to b. A family that fails to
// gather (a malformed label of a Gauge) is left out; the others are written. A family
// registered with Gauge that has no sample yet (no participant blocked) is announced by its
// HELP and TYPE lines, so that a scrape names every family the process has.
func (m *Metrics) Append(b []byte) []byte {
	mfs, _ := prometheus.Gatherers{m.reg, prometheus.GathererFunc(m.gatherRuntime)}.Gather()
	m.mu.Lock()
	for _, c := range m.sampled {
		if !slices.ContainsFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == c.name }) {
			mfs = append(mfs, &dto.MetricFamily{Name: &c.name, Help: &c.help, Type: c.kind.ToDTO()})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	buf := bytes.NewBuffer(b)
	for _, mf := range mfs {
		if len(mf.Metric) == 0 { // MetricFamilyToText refuses a family without metrics
			fmt.Fprintf(buf, "# HELP %s %s\n# TYPE %s %s\n", mf.GetName(), helpEscaper.Replace(mf.GetHelp()),
				mf.GetName(), strings.ToLower(mf.GetType().String()))
			continue
		}
		_, _ = expfmt.MetricFamilyToText(buf, mf)
	}
	return buf.Bytes()
}

// helpEscaper escapes a HELP text as the text format asks.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// gatherRuntime gathers the runtime registry's families that RegisterRuntime exposes.
func (m *Metrics) gatherRuntime() ([]*dto.MetricFamily, error) {
	mfs, err := m.runtime.Gather()
	kept := mfs[:0]
	for _, mf := range mfs {
		if runtimeFamilies[mf.GetName()] {
			kept = append(kept, mf)
		}
	}
	return kept, err
}
