package httpio

import (
	"fmt"
	"math"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? (\S+)$`)
)

// parseExposition checks text against the Prometheus text format (every sample's family
// announced by one HELP and one TYPE line before it, valid names and labels, a counter's
// name ending in _total, float values) and returns each unlabelled sample's value.
func parseExposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	types := map[string]string{}
	helps := map[string]bool{}
	values := map[string]float64{}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, help, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) || help == "" || helps[name] {
				t.Errorf("line %d: bad or repeated HELP: %q", n+1, line)
			}
			helps[name] = true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(rest, " ")
			if !helps[name] || types[name] != "" || (kind != "counter" && kind != "gauge" && kind != "histogram" && kind != "summary") {
				t.Errorf("line %d: TYPE without HELP, repeated or of unknown kind: %q", n+1, line)
			}
			if kind == "counter" && !strings.HasSuffix(name, "_total") {
				t.Errorf("line %d: counter %s does not end in _total", n+1, name)
			}
			types[name] = kind
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %d: not a sample: %q", n+1, line)
			continue
		}
		family := m[1]
		if types[family] == "" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(family, suffix); ok && (types[base] == "histogram" || types[base] == "summary") {
					family = base
				}
			}
		}
		if types[family] == "" {
			t.Errorf("line %d: sample of %s before its TYPE", n+1, m[1])
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Errorf("line %d: value %q: %v", n+1, m[4], err)
		}
		if m[2] == "" {
			values[m[1]] = v
		}
	}
	return values
}

// TestRuntimeMetrics: the runtime and process families follow the text format and hold
// plausible values for this very process.
func TestRuntimeMetrics(t *testing.T) {
	m := NewMetrics()
	m.RegisterRuntime()
	m.route("GET", "/x").observe(200, time.Millisecond)
	m.Gauge("switchboard_test_labelled", "gauge", "A labelled family.", func() []Sample {
		return []Sample{{Labels: `a="1"`, Value: 2}, {Labels: `a="2"`, Value: 3}}
	})
	text := string(m.Append(nil))
	values := parseExposition(t, text)
	now := float64(time.Now().Unix())
	checks := []struct {
		name     string
		min, max float64
	}{
		{"go_goroutines", 1, 1e6},
		{"go_memstats_heap_alloc_bytes", 1, 1 << 40},
		{"go_memstats_sys_bytes", 1, 1 << 40},
		{"go_gc_duration_seconds_count", 0, 1e9},
		{"go_gc_duration_seconds_sum", 0, 1e6},
		{"go_threads", 1, 1e6},
		{"go_sched_gomaxprocs_threads", 1, 1e6},
		{"go_gc_gogc_percent", -1, 1e6},
		{"go_gc_gomemlimit_bytes", 1, math.MaxInt64},
		{"process_cpu_seconds_total", 1e-6, 1e6},
		{"process_resident_memory_bytes", 1 << 20, 1 << 40},
		{"process_open_fds", 3, 1e7},
		{"process_max_fds", 3, 1e12},
		{"process_start_time_seconds", now - 3600, now + 1},
	}
	for _, c := range checks {
		v, ok := values[c.name]
		if !ok || v < c.min || v > c.max {
			t.Errorf("%s = %v (present %v), want in [%g, %g]", c.name, v, ok, c.min, c.max)
		}
	}
	if !strings.Contains(text, `go_gc_duration_seconds{quantile="0.5"} `) {
		t.Errorf("no GC pause median:\n%s", text)
	}
	if !strings.Contains(text, fmt.Sprintf("go_info{version=%q} 1\n", runtime.Version())) {
		t.Errorf("no go_info sample:\n%s", text)
	}
}

// TestMetricsInfinity: an infinite value is written +Inf or -Inf, as the text format spells
// it, and NaN stays NaN.
func TestMetricsInfinity(t *testing.T) {
	m := NewMetrics()
	m.Gauge("switchboard_test_values", "gauge", "Values.", func() []Sample {
		return []Sample{{Labels: `v="a"`, Value: math.Inf(1)}, {Labels: `v="b"`, Value: math.Inf(-1)},
			{Labels: `v="c"`, Value: math.NaN()}, {Labels: `v="d"`, Value: 1.5}}
	})
	text := string(m.Append(nil))
	for _, want := range []string{`{v="a"} +Inf` + "\n", `{v="b"} -Inf` + "\n", `{v="c"} NaN` + "\n", `{v="d"} 1.5` + "\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q:\n%s", want, text)
		}
	}
}

// TestMetricsGaugeFamilies: a Gauge family's labels are written as registered, a family with
// no sample yet is announced by its HELP and TYPE lines, a route's histogram is there before
// its first request, and a family whose labels do not parse has no sample while the rest of
// the scrape is written.
func TestMetricsGaugeFamilies(t *testing.T) {
	m := NewMetrics()
	m.Gauge("switchboard_test_quoted_total", "counter", "A labelled counter.", func() []Sample {
		return []Sample{{Labels: `b="x",a="1"`, Value: 4}}
	})
	m.Gauge("switchboard_test_empty", "gauge", "A family without samples.", func() []Sample { return nil })
	m.Gauge("switchboard_test_garbled", "gauge", "A family whose labels do not parse.", func() []Sample {
		return []Sample{{Labels: `a=1`, Value: 1}}
	})
	m.route("GET", "/y")
	text := string(m.Append(nil))
	parseExposition(t, text)
	for _, want := range []string{
		`switchboard_test_quoted_total{a="1",b="x"} 4` + "\n",
		"# HELP switchboard_test_empty A family without samples.\n# TYPE switchboard_test_empty gauge\n",
		`switchboard_http_request_duration_seconds_count{method="GET",route="/y"} 0` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\nswitchboard_test_garbled") {
		t.Errorf("a family with garbled labels has a sample:\n%s", text)
	}
}

// TestParseLabels: Gauge's labels in Prometheus syntax, escapes included, split into names
// and values; a malformed one is an error.
func TestParseLabels(t *testing.T) {
	names, values, err := parseLabels(`a="1",b="x\"y\\z\n"`)
	if err != nil || strings.Join(names, "|") != "a|b" || strings.Join(values, "|") != "1|x\"y\\z\n" {
		t.Errorf("parseLabels = %q, %q, %v", names, values, err)
	}
	for _, bad := range []string{`a=1`, `a="1`, `a="1",b`} {
		if _, _, err := parseLabels(bad); err == nil {
			t.Errorf("parseLabels(%q): no error", bad)
		}
	}
}
