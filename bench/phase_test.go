package bench

import (
	"testing"
	"time"
)

// TestCPUPer1k: the server's CPU per 1,000 requests scales the window's requests to the time
// the CPU was read over (warm-up included), and a phase that ended before its window (the
// joining phase ends when the second process is ready) counts its requests over its span.
func TestCPUPer1k(t *testing.T) {
	for _, c := range []struct {
		name                  string
		window, span, elapsed time.Duration
		requests              uint64
		cpu                   time.Duration
		want                  float64
	}{
		{"a whole window after a warm-up", 5 * time.Second, 5 * time.Second, 7 * time.Second, 5000, 7 * time.Second, 1},
		{"an open loop that fell behind (scaled by its window, as before)", 5 * time.Second, 6 * time.Second, 8 * time.Second, 5000, 8 * time.Second, 1},
		{"ended at its span, a tenth of its window", 600 * time.Second, 60 * time.Second, 60 * time.Second, 60000, 30 * time.Second, 0.5},
	} {
		p := &Phase{Result: &Result{Window: c.window, Span: c.span, Requests: c.requests}, ServerCPU: c.cpu, Elapsed: c.elapsed}
		if got := p.CPUPer1k(); got < c.want*0.999 || got > c.want*1.001 {
			t.Errorf("%s: %.3f s per 1k requests, want %.3f", c.name, got, c.want)
		}
	}
}
