package bench

import (
	"strings"
	"testing"
	"time"
)

// An open-loop write phase that ran out of what it sends (entry URLs, admitted sessions)
// measured nothing at its rate: its p99 target reads "not measured", never met; one that
// ran its window is judged by its p99.
func TestWriteP99NeedsTheWholeWindow(t *testing.T) {
	phase := func(scenario string, rate float64, answered uint64, span time.Duration, lat time.Duration) *Phase {
		h := NewHistogram()
		for range answered {
			h.RecordDuration(lat)
		}
		return &Phase{Result: &Result{Scenario: scenario, Mode: "open", Offered: rate, Window: 5 * time.Second,
			Requests: answered, Span: span, Throughput: float64(answered) / max(span.Seconds(), 1e-9), Hist: h},
			Target: "switchboard"}
	}
	verdict := func(r *Report, prefix string) TargetCheck {
		t.Helper()
		for _, c := range r.Targets() {
			if strings.HasPrefix(c.Name, prefix) {
				return c
			}
		}
		t.Fatalf("no target %q", prefix)
		return TargetCheck{}
	}
	for _, tc := range []struct {
		name    string
		entries *Phase
		met     *bool
		says    string
	}{
		{"ran out before the window", phase(ScEntries, 5000, 0, 0, 0), nil, "ran out of entry URLs after 0s of its 5s window (0 answered)"},
		{"ran out within it", phase(ScEntries, 5000, 10000, 2*time.Second, 3*time.Millisecond), nil, "ran out of entry URLs after 2s"},
		{"the whole window, fast", phase(ScEntries, 5000, 25000, 5*time.Second, 3*time.Millisecond), boolp(true), "p99 3."},
		{"the whole window, slow", phase(ScEntries, 5000, 25000, 5*time.Second, 40*time.Millisecond), boolp(false), "p99 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Phases: []*Phase{tc.entries, phase(ScCallbacks, 3000, 15000, 5*time.Second, 2*time.Millisecond)}}
			c := verdict(r, "entries p99")
			if (c.Met == nil) != (tc.met == nil) || c.Met != nil && *c.Met != *tc.met || !strings.Contains(c.Name+" "+c.Measured, tc.says) {
				t.Errorf("%s: met %v, measured %q; want met %v, saying %q", c.Name, deref(c.Met), c.Measured, deref(tc.met), tc.says)
			}
			if cb := verdict(r, "callbacks p99"); cb.Met == nil || !*cb.Met {
				t.Errorf("callbacks over their whole window: %+v", cb)
			}
		})
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
