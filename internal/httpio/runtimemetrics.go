package httpio

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"syscall"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/self/stat's times: 100 on every
// Linux architecture Go supports (sysconf is out of reach without cgo).
const clockTicks = 100

// RegisterRuntime adds the Go runtime's and the process's own families to the registry,
// under the names Prometheus' client libraries use so that stock dashboards and alerts
// apply: goroutines, heap, garbage collections and their pauses, resident memory, open file
// descriptors, start time and CPU time. They are read at scrape time from runtime/metrics,
// getrusage and /proc/self (on Linux; elsewhere the /proc families have no sample).
func (m *Metrics) RegisterRuntime() {
	one := func(v float64) []Sample { return []Sample{{Value: v}} }
	rt := func(name string) func() []Sample {
		return func() []Sample {
			s := []metrics.Sample{{Name: name}}
			metrics.Read(s)
			switch s[0].Value.Kind() {
			case metrics.KindUint64:
				return one(float64(s[0].Value.Uint64()))
			case metrics.KindFloat64:
				return one(s[0].Value.Float64())
			}
			return nil
		}
	}
	m.Gauge("go_info", "gauge", "The Go version the binary was built with.",
		func() []Sample { return []Sample{{Labels: `version="` + runtime.Version() + `"`, Value: 1}} })
	m.Gauge("go_goroutines", "gauge", "Goroutines that currently exist.", rt("/sched/goroutines:goroutines"))
	m.Gauge("go_memstats_heap_alloc_bytes", "gauge", "Bytes of heap objects allocated and not yet freed.",
		rt("/memory/classes/heap/objects:bytes"))
	m.Gauge("go_memstats_sys_bytes", "gauge", "Bytes of memory the Go runtime obtained from the operating system.",
		rt("/memory/classes/total:bytes"))
	m.Gauge("go_threads", "gauge", "OS threads the Go runtime created.", func() []Sample {
		n, _ := runtime.ThreadCreateProfile(nil)
		return one(float64(n))
	})
	m.Gauge("go_sched_gomaxprocs_threads", "gauge", "GOMAXPROCS: OS threads that may run Go code at once.",
		rt("/sched/gomaxprocs:threads"))
	m.Gauge("go_gc_gogc_percent", "gauge", "GOGC: heap growth that triggers a collection, in percent.", rt("/gc/gogc:percent"))
	m.Gauge("go_gc_gomemlimit_bytes", "gauge", "GOMEMLIMIT: the Go runtime's soft memory limit.", rt("/gc/gomemlimit:bytes"))
	m.Gauge("go_gc_duration_seconds", "summary", "Stop-the-world pauses of garbage collections: min, quartiles, max; their sum and count.",
		func() []Sample {
			s := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
			debug.ReadGCStats(&s)
			out := make([]Sample, 0, 7)
			for i, q := range [...]string{"0", "0.25", "0.5", "0.75", "1"} {
				out = append(out, Sample{Labels: `quantile="` + q + `"`, Value: s.PauseQuantiles[i].Seconds()})
			}
			return append(out, Sample{Suffix: "_sum", Value: s.PauseTotal.Seconds()},
				Sample{Suffix: "_count", Value: float64(s.NumGC)})
		})
	m.Gauge("process_cpu_seconds_total", "counter", "User and system CPU time of the process.", func() []Sample {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return nil
		}
		return one(time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds())
	})
	m.Gauge("process_resident_memory_bytes", "gauge", "Resident memory of the process.", func() []Sample {
		if rss, ok := residentBytes(); ok {
			return one(float64(rss))
		}
		return nil
	})
	m.Gauge("process_open_fds", "gauge", "Open file descriptors of the process.", func() []Sample {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return nil
		}
		return one(float64(len(fds)))
	})
	m.Gauge("process_max_fds", "gauge", "The process's limit on open file descriptors.", func() []Sample {
		var l syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
			return nil
		}
		return one(float64(l.Cur))
	})
	start := processStart(m.started)
	m.Gauge("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.",
		func() []Sample { return one(float64(start.Unix())) })
}

// residentBytes reads the resident set size from /proc/self/statm (its second field, in
// pages).
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// processStart is the process's start time from /proc/self/stat (field 22, clock ticks
// after boot) and /proc/stat's btime, or fallback where /proc is missing.
func processStart(fallback time.Time) time.Time {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fallback
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return fallback
	}
	f := bytes.Fields(stat[i+1:]) // f[0] is field 3
	if len(f) < 20 {
		return fallback
	}
	ticks, err := strconv.ParseInt(string(f[19]), 10, 64)
	if err != nil {
		return fallback
	}
	all, err := os.ReadFile("/proc/stat")
	if err != nil {
		return fallback
	}
	for _, line := range bytes.Split(all, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return fallback
			}
			return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / clockTicks)
		}
	}
	return fallback
}
