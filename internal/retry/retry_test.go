package retry

import (
	"context"
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

// TestAttempt skips attempts during the backoff and ignores failures of a cancelled ctx.
func TestAttempt(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	now := time.Unix(0, 0)
	o := NewOutage(zap.New(core), "t", Backoff{Min: time.Second, Max: time.Second}, func() time.Time { return now })
	calls := 0
	fail := func(context.Context) error { calls++; return errors.New("down") }
	ok := func(context.Context) error { calls++; return nil }
	ctx := context.Background()
	for _, step := range []struct {
		advance time.Duration
		f       func(context.Context) error
		calls   int
		failing bool
	}{
		{0, fail, 1, true},
		{100 * time.Millisecond, fail, 1, true}, // not due: skipped
		{2 * time.Second, fail, 2, true},
		{2 * time.Second, ok, 3, false},
		{0, ok, 4, false},
	} {
		now = now.Add(step.advance)
		o.Attempt(ctx, step.f)
		if calls != step.calls || o.Failing() != step.failing {
			t.Fatalf("calls %d failing %v, want %d %v", calls, o.Failing(), step.calls, step.failing)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	o.Attempt(cancelled, fail)
	if o.Failing() || logs.Len() != 2 {
		t.Fatalf("a cancelled attempt counted: failing %v, %d lines", o.Failing(), logs.Len())
	}
}
