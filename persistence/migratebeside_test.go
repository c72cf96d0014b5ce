package persistence_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// besideWriter is what migrateBesideWriter measured: how long the migration took, how many
// inserts ran beside it and how long the slowest of them waited.
type besideWriter struct {
	took     time.Duration
	inserted int64
	slowest  time.Duration
}

// migrateBesideWriter migrates db to the latest schema while a writer of its own pool (on
// url) runs insert(i) for i = 0, 1, … one at a time, a millisecond apart, as entries arrive:
// from 100 ms before the migration to 200 ms after it. It fails the test when an insert
// fails.
func migrateBesideWriter(t *testing.T, db *persistence.DB, url string, insert func(ctx context.Context, w *persistence.DB, i int) error) besideWriter {
	t.Helper()
	ctx := context.Background()
	w, err := persistence.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var (
		stop     atomic.Bool
		inserted atomic.Int64
		slowest  atomic.Int64 // ns
		wg       sync.WaitGroup
		writeErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			start := time.Now()
			if err := insert(ctx, w, i); err != nil {
				writeErr = err
				return
			}
			inserted.Add(1)
			if d := int64(time.Since(start)); d > slowest.Load() {
				slowest.Store(d)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	_, migErr := db.Migrate(ctx)
	took := time.Since(began)
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if migErr != nil {
		t.Fatal(migErr)
	}
	if writeErr != nil {
		t.Fatalf("an insert during the migration failed: %v", writeErr)
	}
	return besideWriter{took: took, inserted: inserted.Load(), slowest: time.Duration(slowest.Load())}
}
