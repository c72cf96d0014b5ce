package engine_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// entryLoadParticipants is the number of participants BenchmarkPanelLoadEntries loads
// (SWITCHBOARD_ENTRY_BENCH_N overrides it, e.g. for a quick run); ten entries each.
func entryLoadParticipants() int {
	if n, err := strconv.Atoi(os.Getenv("SWITCHBOARD_ENTRY_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// entryRows generates n start-up entry rows in no particular order, as the start-up load
// streams them: a uniformly random participant among ids 1..participants (about n/participants
// entries each), a campaign among 5,000 and a time in the last 90 days. Rows are generated on
// the fly (xorshift) so that no slice of rows takes memory of its own.
func entryRows(n, participants int, row func(participant, campaign, at int64)) {
	x := uint64(88172645463325252)
	next := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	for range n {
		r := next()
		pid := int64(r%uint64(participants)) + 1
		cid := int64(r>>32%5000) + 1
		at := synth.Now - int64(next()%(90*86400))
		row(pid, cid, at)
	}
}

// BenchmarkPanelLoadEntries measures the start-up load of the entry history into a panel
// of entryLoadParticipants() participants: ten rows per participant in random order,
// recorded one by one (RecordEntry, "one") or in batches of 4,096 (RecordEntries, "batch");
// "rows-only" generates the rows without recording them (the generator's share). It reports ns/row, the bytes allocated per row (the
// load's garbage) and the live heap the histories add per participant. Run with
// go test ./engine -run '^$' -bench PanelLoadEntries -benchtime 1x -count 5
func BenchmarkPanelLoadEntries(b *testing.B) {
	n := entryLoadParticipants()
	rows := 10 * n
	load := map[string]func(pl *engine.Panel){
		"rows-only": func(*engine.Panel) { // the generator's own share of the figures
			entryRows(rows, n, func(p, c, at int64) {})
		},
		"one": func(pl *engine.Panel) {
			entryRows(rows, n, func(p, c, at int64) { pl.RecordEntry(p, c, at) })
		},
		"batch": func(pl *engine.Panel) {
			batch := make([]engine.EntryRow, 0, 4096)
			entryRows(rows, n, func(p, c, at int64) {
				if batch = append(batch, engine.EntryRow{Participant: p, Campaign: c, At: at}); len(batch) == cap(batch) {
					pl.RecordEntries(batch)
					batch = batch[:0]
				}
			})
			pl.RecordEntries(batch)
		},
	}
	for _, name := range []string{"rows-only", "one", "batch"} {
		b.Run(name, func(b *testing.B) { benchEntryLoad(b, n, rows, load[name]) })
	}
}

// benchEntryLoad runs load into a fresh panel of n participants per iteration and
// reports its figures (BenchmarkPanelLoadEntries).
func benchEntryLoad(b *testing.B, n, rows int, load func(pl *engine.Panel)) {
	for range b.N {
		b.StopTimer()
		pl := engine.NewPanel()
		loadSynthPanel(pl, n)
		before := heapInUse()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		b.StartTimer()
		start := time.Now()
		load(pl)
		took := time.Since(start)
		b.StopTimer()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(took.Nanoseconds())/float64(rows), "ns/row")
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(rows), "alloc-B/row")
		b.ReportMetric(float64(heapInUse()-before)/float64(n), "entry-B/participant")
		runtime.KeepAlive(pl)
		b.StartTimer()
	}

}

// BenchmarkPanelGC measures what a panel of entryLoadParticipants() participants with ten
// entries each costs the collector: one full collection (runtime.GC, both phases, every
// core) per op, with the heap's object count. A serving process marks the panel at every
// cycle, and a cycle's marking is time the requests wait on:
// go test ./engine -run '^$' -bench PanelGC -benchtime 5x -count 3
func BenchmarkPanelGC(b *testing.B) {
	n := entryLoadParticipants()
	pl := engine.NewPanel()
	loadSynthPanel(pl, n)
	batch := make([]engine.EntryRow, 0, 4096)
	entryRows(10*n, n, func(p, c, at int64) {
		if batch = append(batch, engine.EntryRow{Participant: p, Campaign: c, At: at}); len(batch) == cap(batch) {
			pl.RecordEntries(batch)
			batch = batch[:0]
		}
	})
	pl.RecordEntries(batch)
	pl.Trim() // as a process does once its loads are in
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	b.StopTimer()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapObjects), "heap-objects")
	b.ReportMetric(float64(m.HeapAlloc)/float64(n), "heap-B/participant")
	runtime.KeepAlive(pl)
}
