package mirror

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestMirrorOverPostgres runs a mirror on a real LISTEN connection and cuts the network
// between it and the server for a second: it reconnects, reloads everything (notifications
// sent meanwhile are lost), hears notifications again, and logs the outage twice.
func TestMirrorOverPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	link, linkURL := pgtest.NewLink(t, dbURL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := persistence.Open(ctx, linkURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	direct, err := persistence.Open(ctx, dbURL, nil) // the notifying side, never cut
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	var mu sync.Mutex
	fulls := 0
	var reloaded []int64
	core, logs := observer.New(zap.InfoLevel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config[int64]{
			Name:   "pg",
			Log:    zap.New(core),
			Listen: Listener(db.Feed.ListenOn, "mirror_test"),
			Notified: func(p string, add func(int64)) {
				if id, err := strconv.ParseInt(p, 10, 64); err == nil {
					add(id)
				}
			},
			Reload: func(_ context.Context, ids []int64) error {
				mu.Lock()
				defer mu.Unlock()
				reloaded = append(reloaded, ids...)
				return nil
			},
			Full: func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				fulls++
				return nil
			},
			Backoff: retry.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		})
	}()
	state := func() (int, []int64) { mu.Lock(); defer mu.Unlock(); return fulls, slices.Clone(reloaded) }
	notify := func(id int64) {
		if _, err := direct.Pool.Exec(ctx, `SELECT pg_notify('mirror_test', $1)`, strconv.FormatInt(id, 10)); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, "the first full load", func() bool { f, _ := state(); return f == 1 })
	notify(42)
	eventually(t, "42 reloaded", func() bool { _, r := state(); return slices.Contains(r, 42) })

	link.Cut()
	time.Sleep(time.Second)
	notify(43) // lost: the mirror is disconnected
	link.Restore()
	eventually(t, "the full load after reconnecting", func() bool { f, _ := state(); return f == 2 })
	notify(44)
	eventually(t, "44 reloaded", func() bool { _, r := state(); return slices.Contains(r, 44) })
	cancel()
	<-done

	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message)
	}
	want := []string{"background task failing; retrying with backoff", "background task recovered"}
	if !slices.Equal(got, want) {
		t.Fatalf("log lines %q, want %q", got, want)
	}
}
