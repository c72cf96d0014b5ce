package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/engine"
)

func TestAllocationFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   string
		want  engine.Allocation
		every time.Duration
		fails bool
	}{
		{"default", nil, "", engine.AllocationGreedy, 5 * time.Minute, false},
		{"flag", []string{"--allocation", "balanced", "--allocation-every", "1m"}, "", engine.AllocationBalanced, time.Minute, false},
		{"environment", nil, "balanced", engine.AllocationBalanced, 5 * time.Minute, false},
		{"flag over environment", []string{"--allocation=greedy"}, "balanced", engine.AllocationGreedy, 5 * time.Minute, false},
		{"environment greedy", nil, "greedy", engine.AllocationGreedy, 5 * time.Minute, false},
		{"unknown policy", []string{"--allocation", "fair"}, "", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SWITCHBOARD_ALLOCATION", tc.env) // restored after the test
			if tc.env == "" {
				os.Unsetenv("SWITCHBOARD_ALLOCATION")
			}
			f := newFlags("serve")
			f.SetOutput(io.Discard)
			var cfg app.Config
			allocationFlags(f, &cfg)
			err := f.parse(tc.args)
			if tc.fails {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil || cfg.Allocation != tc.want || cfg.AllocationEvery != tc.every {
				t.Fatalf("got %v every %v, err %v; want %v every %v", cfg.Allocation, cfg.AllocationEvery, err, tc.want, tc.every)
			}
		})
	}
}

// A server started with the balanced allocation ranks under it and refreshes its weights in
// the background: each refresh publishes a new snapshot.
func TestServeBalancedAllocation(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) {
		c.Allocation = engine.AllocationBalanced
		c.AllocationEvery = 50 * time.Millisecond
	}})
	if got := s.App.Engine.Allocation(); got != engine.AllocationBalanced {
		t.Fatalf("engine allocation %v", got)
	}
	// Ready means weighted: the first refresh is one of the loads /readyz waits for.
	if s.App.Engine.AllocationRefreshedAt() == 0 {
		t.Fatal("ready before the allocation's first refresh")
	}
	if r := s.Send(t, s.NewRequest(t, "GET", "/readyz", nil)); r.Status != 200 || !strings.Contains(string(r.Body), `"allocation":"ok"`) {
		t.Fatalf("/readyz: %d %s", r.Status, r.Body)
	}
	v := s.App.Engine.Snapshot().Version()
	deadline := time.Now().Add(10 * time.Second)
	for s.App.Engine.Snapshot().Version() == v {
		if time.Now().After(deadline) {
			t.Fatal("no weight refresh within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAllocationSplitFlag(t *testing.T) {
	for _, tc := range []struct {
		name, arg, want string // want: the split, or the error's telling part
		fails           bool
	}{
		{"off", "", "", false},
		{"half and half", "greedy:50,bidprice:50", "greedy:50,bidprice:50", false},
		{"three arms", "balanced:20,edf:30,greedy:50", "balanced:20,edf:30,greedy:50", false},
		{"short of 100", "greedy:50,bidprice:40", "sum to 90", true},
		{"unknown policy", "greedy:50,fair:50", `unknown policy "fair"`, true},
		{"duplicate", "greedy:50,greedy:50", "given twice", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Unsetenv("SWITCHBOARD_ALLOCATION_SPLIT")
			f := newFlags("serve")
			f.SetOutput(io.Discard)
			var cfg app.Config
			allocationFlags(f, &cfg)
			var args []string
			if tc.arg != "" {
				args = []string{"--allocation-split", tc.arg}
			}
			err := f.parse(args)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), "allocation-split") || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v; want one naming the flag and %q", err, tc.want)
				}
				return
			}
			if err != nil || cfg.AllocationSplit.String() != tc.want || cfg.AllocationSplit.Enabled() != (tc.want != "") {
				t.Fatalf("got %q, err %v; want %q", cfg.AllocationSplit, err, tc.want)
			}
		})
	}
}

// A server started with a split ranks under every arm's policy and is ready once the
// weighted arm's weights are computed, although the split's first arm is greedy.
func TestServeAllocationSplit(t *testing.T) {
	t.Parallel()
	sp, err := engine.ParseAllocationSplit("greedy:50,bidprice:50")
	if err != nil {
		t.Fatal(err)
	}
	s := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) {
		c.AllocationSplit = sp
		c.AllocationEvery = 50 * time.Millisecond
	}})
	if got := s.App.Engine.AllocationSplit(); got.String() != "greedy:50,bidprice:50" {
		t.Fatalf("engine split %q", got)
	}
	if s.App.Engine.AllocationRefreshedAt() == 0 {
		t.Fatal("ready before the bidprice arm's first refresh")
	}
	if r := s.Send(t, s.NewRequest(t, "GET", "/readyz", nil)); r.Status != 200 || !strings.Contains(string(r.Body), `"allocation":"ok"`) {
		t.Fatalf("/readyz: %d %s", r.Status, r.Body)
	}
}
