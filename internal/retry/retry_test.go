package retry

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{1, 80 * time.Millisecond, 120 * time.Millisecond},
		{2, 160 * time.Millisecond, 240 * time.Millisecond},
		{4, 640 * time.Millisecond, 960 * time.Millisecond},
		{7, 4 * time.Second, 5 * time.Second}, // 6.4 s capped, then jittered
		{100, 4 * time.Second, 5 * time.Second},
	} {
		for range 200 {
			if d := b.Delay(tc.n); d < tc.min || d > tc.max {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", tc.n, d, tc.min, tc.max)
			}
		}
	}
}

// TestOutageLogsOncePerStateChange runs a loop that attempts its work every 20 ms (the
// counts flush) through a 10 s outage on a fake clock: two lines, not one per attempt.
func TestOutageLogsOncePerStateChange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outage   time.Duration
		outages  int
		maxTries int
	}{
		{"one 10 s outage", 10 * time.Second, 1, 12},
		{"two 10 s outages", 10 * time.Second, 2, 24},
		{"a blip", 30 * time.Millisecond, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			now := time.Unix(1_700_000_000, 0)
			o := NewOutage(zap.New(core), "counts flush", Default, func() time.Time { return now })
			attempts := 0
			for range tc.outages {
				end := now.Add(tc.outage)
				for ; ; now = now.Add(20 * time.Millisecond) {
					if !o.Due() {
						continue
					}
					attempts++
					if now.Before(end) {
						o.Failed(errors.New("connection refused"))
						continue
					}
					o.Succeeded()
					break
				}
				for range 50 { // healthy for a second
					now = now.Add(20 * time.Millisecond)
					o.Succeeded()
				}
			}
			if attempts > tc.maxTries {
				t.Errorf("%d attempts, want at most %d (backoff)", attempts, tc.maxTries)
			}
			if got, want := logs.Len(), 2*tc.outages; got != want {
				t.Fatalf("%d log lines, want %d: %v", got, want, logs.All())
			}
			for i, e := range logs.All() {
				switch i % 2 {
				case 0:
					if e.Message != "background task failing; retrying with backoff" || e.ContextMap()["task"] != "counts flush" {
						t.Errorf("line %d = %q %v", i, e.Message, e.ContextMap())
					}
				case 1:
					f := e.ContextMap()["failures"].(int64)
					if e.Message != "background task recovered" || f < 1 || int(f) > tc.maxTries/tc.outages {
						t.Errorf("line %d = %q %v", i, e.Message, e.ContextMap())
					}
				}
			}
		})
	}
}
