package app

import (
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// registerConnMetrics reports the main listener's connections against their limits
// (docs/operations.md, "Connections").
func registerConnMetrics(m *httpio.Metrics, server *httpio.Server) {
	conns := func(f func(httpio.ConnStats) float64) func() []httpio.Sample {
		return func() []httpio.Sample { return []httpio.Sample{{Value: f(server.Connections())}} }
	}
	m.Gauge("switchboard_http_connections", "gauge", "Client connections open.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Open) }))
	m.Gauge("switchboard_http_connections_limit", "gauge", "Client connections allowed at once (0: no limit).",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Limit) }))
	m.Gauge("switchboard_http_connections_per_address_limit", "gauge",
		"Client connections allowed at once from one address (0: no limit).",
		conns(func(c httpio.ConnStats) float64 { return float64(c.PerAddrLimit) }))
	m.Gauge("switchboard_http_connections_refused_total", "counter",
		"Connections closed at once because a limit was reached and no connection was idle.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Refused) }))
	m.Gauge("switchboard_http_connections_shed_total", "counter",
		"Idle or silent connections closed to make room for new ones at a limit, or to free a descriptor.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.Shed) }))
	m.Gauge("switchboard_http_accept_errors_total", "counter",
		"Accepts that failed (out of file descriptors, a connection aborted) and were retried after a backoff.",
		conns(func(c httpio.ConnStats) float64 { return float64(c.AcceptErrors) }))
}

// registerPoolMetrics reports the database pool's connections: in use, idle, open, its
// limit and the acquires that had to wait.
func registerPoolMetrics(m *httpio.Metrics, stats func() persistence.PoolStats) {
	stat := func(f func() float64) func() []httpio.Sample {
		return func() []httpio.Sample { return []httpio.Sample{{Value: f()}} }
	}
	m.Gauge("switchboard_db_pool_acquired_conns", "gauge", "Connections in use.",
		stat(func() float64 { return float64(stats().Acquired) }))
	m.Gauge("switchboard_db_pool_idle_conns", "gauge", "Idle connections.",
		stat(func() float64 { return float64(stats().Idle) }))
	m.Gauge("switchboard_db_pool_total_conns", "gauge", "Open connections.",
		stat(func() float64 { return float64(stats().Total) }))
	m.Gauge("switchboard_db_pool_max_conns", "gauge", "Pool size limit.",
		stat(func() float64 { return float64(stats().Max) }))
	m.Gauge("switchboard_db_pool_acquire_wait_total", "counter", "Acquires that had to wait.",
		stat(func() float64 { return float64(stats().EmptyAcquires) }))
}
