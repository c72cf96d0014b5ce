package app

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
)

// TestSettleAfterTheLoads: the heap is reported settled only once every load is in, and
// by then a collection has run since the last load came in.
func TestSettleAfterTheLoads(t *testing.T) {
	panel, counters := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go settle(context.Background(), panel, []load{{"panel", panel}, {"counters", counters}}, engine.NewPanel(), true, zap.NewNop(), done)
	close(panel)
	select {
	case <-done:
		t.Fatal("settled before the counters were loaded")
	case <-time.After(50 * time.Millisecond):
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	close(counters)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not settled 10 s after the loads")
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.NumGC <= before.NumGC {
		t.Fatalf("settled without a collection (%d cycles before, %d after)", before.NumGC, after.NumGC)
	}
}

// A process stopped while it loads stops settling: done stays open.
func TestSettleStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		settle(ctx, make(chan struct{}), nil, engine.NewPanel(), true, zap.NewNop(), done)
		close(returned)
	}()
	cancel()
	<-returned
	select {
	case <-done:
		t.Fatal("settled although stopped before the panel was loaded")
	default:
	}
}

// A joining process settles without the collection, once its loads are in.
func TestSettleJoining(t *testing.T) {
	panel := make(chan struct{})
	done := make(chan struct{})
	go settle(context.Background(), panel, []load{{"panel", panel}}, engine.NewPanel(), false, zap.NewNop(), done)
	select {
	case <-done:
		t.Fatal("settled before the panel was loaded")
	case <-time.After(20 * time.Millisecond):
	}
	close(panel)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a joining process not settled 10 s after its loads")
	}
}
