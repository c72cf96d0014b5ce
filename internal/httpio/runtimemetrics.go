package httpio

import (
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// runtimeFamilies are the families of the library's Go and process collectors that
// /metrics exposes: goroutines, heap, garbage collections and their pauses, the scheduler's
// and collector's settings, resident memory, open file descriptors, start time and CPU time.
// The collectors offer more (every MemStats field, virtual memory, network bytes); these are
// the ones the dashboard (docs/grafana) and the operations guide use.
var runtimeFamilies = map[string]bool{
	"go_info": true, "go_goroutines": true, "go_threads": true,
	"go_memstats_heap_alloc_bytes": true, "go_memstats_sys_bytes": true,
	"go_sched_gomaxprocs_threads": true, "go_gc_gogc_percent": true, "go_gc_gomemlimit_bytes": true,
	"go_gc_duration_seconds":    true,
	"process_cpu_seconds_total": true, "process_resident_memory_bytes": true, "process_open_fds": true,
	"process_max_fds": true, "process_start_time_seconds": true,
}

// RegisterRuntime adds the Go runtime's and the process's own families, from
// client_golang's Go and process collectors, under the names stock dashboards and alerts
// use (runtimeFamilies).
func (m *Metrics) RegisterRuntime() {
	m.runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}
