package app

import (
	"context"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
)

// settle readies the heap for traffic once the loads are in, then closes done: it returns
// what the panel's load left unused (Panel.Trim, an estimate above the participants active
// within the window) and collects the start-up's garbage in one cycle now. The loads leave
// hundreds of megabytes of it (the entry history's rows, the engine's build), so that
// otherwise the collector's first cycle, marking a live heap of about 550 MB at 100k
// campaigns for 60–170 ms with one of two cores, fell into the first minute of traffic
// (docs/performance.md, "The collector's pace"). /readyz waits for it ("heap"). A process
// joining serving processes (collect false) skips the collection: it loaded gently to
// spare their cores, and a cycle over its whole heap would take one of them at once for a
// few hundred milliseconds; its first cycle comes with its own traffic instead.
func settle(ctx context.Context, panelLoaded <-chan struct{}, loads []load, pl *engine.Panel, collect bool, log *zap.Logger, done chan<- struct{}) {
	select {
	case <-panelLoaded:
		pl.Trim()
	case <-ctx.Done():
		return
	}
	for _, l := range loads {
		select {
		case <-l.loaded:
		case <-ctx.Done():
			return
		}
	}
	if !collect {
		close(done)
		return
	}
	start := time.Now()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	log.Info("start-up garbage collected", zap.Duration("took", time.Since(start)), zap.Uint64("heap_bytes", ms.HeapAlloc))
	close(done)
}
