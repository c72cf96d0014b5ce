package app

import (
	"runtime"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// A process counts as serving with an engine loaded and a heartbeat fresher than three
// beats.
func TestServing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	loaded := now.Add(-time.Minute)
	for _, tc := range []struct {
		name string
		ps   []persistence.ServeProcess
		want int
	}{
		{"none", nil, 0},
		{"fresh and loaded", []persistence.ServeProcess{{SnapshotAt: loaded, UpdatedAt: now.Add(-5 * time.Second)}}, 1},
		{"just under three beats", []persistence.ServeProcess{{SnapshotAt: loaded, UpdatedAt: now.Add(-servingFresh + time.Second)}}, 1},
		{"stale", []persistence.ServeProcess{{SnapshotAt: loaded, UpdatedAt: now.Add(-servingFresh)}}, 0},
		{"still loading", []persistence.ServeProcess{{UpdatedAt: now}}, 0},
		{"two of three", []persistence.ServeProcess{
			{SnapshotAt: loaded, UpdatedAt: now}, {UpdatedAt: now}, {SnapshotAt: loaded, UpdatedAt: now.Add(-time.Second)}}, 2},
	} {
		if got := serving(tc.ps, now); got != tc.want {
			t.Errorf("%s: %d serving, want %d", tc.name, got, tc.want)
		}
	}
}

// GOMAXPROCS is 1 while any joining load holds it and comes back when the last one ends,
// whatever the order; a restore called twice counts once.
func TestThrottleProcs(t *testing.T) {
	want := runtime.GOMAXPROCS(0)
	a := throttleProcs()
	b := throttleProcs()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d while throttled", got)
	}
	a()
	a()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d with one holder left", got)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS %d after the last restore, want %d", got, want)
	}
}
