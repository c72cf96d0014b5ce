package mirror

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/retry"
)

// fakeDB stands in for the database side: LISTEN connections fed by notify, which can be
// down (connections fail, reloads fail).
type fakeDB struct {
	mu      sync.Mutex
	down    bool
	conns   []*fakeConn
	fulls   int
	batches [][]int64
}

type fakeConn struct {
	ch   chan string
	lost chan struct{}
	once sync.Once
}

func (c *fakeConn) Next(ctx context.Context) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-c.lost:
		return "", errors.New("connection lost")
	case p := <-c.ch:
		return p, nil
	}
}

func (c *fakeConn) Close() { c.once.Do(func() { close(c.lost) }) }

func (f *fakeDB) listen(ctx context.Context, channel string) (*fakeConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errors.New("connection refused")
	}
	c := &fakeConn{ch: make(chan string, 100), lost: make(chan struct{})}
	f.conns = append(f.conns, c)
	return c, nil
}

func (f *fakeDB) notify(p string) {
	f.mu.Lock()
	c := f.conns[len(f.conns)-1]
	f.mu.Unlock()
	c.ch <- p
}

func (f *fakeDB) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if down {
		for _, c := range f.conns {
			c.Close()
		}
	}
}

func (f *fakeDB) state() (conns, fulls int, batches [][]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns), f.fulls, slices.Clone(f.batches)
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestMirror(t *testing.T) {
	f := &fakeDB{}
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config[int64]{
			Name:   "test",
			Log:    zap.New(core),
			Listen: Listener(f.listen, "chan"),
			Notified: func(p string, add func(int64)) {
				if id, err := strconv.ParseInt(p, 10, 64); err == nil {
					add(id)
				}
			},
			Debounce: 30 * time.Millisecond,
			Reload: func(_ context.Context, ids []int64) error {
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.down {
					return errors.New("connection refused")
				}
				slices.Sort(ids)
				f.batches = append(f.batches, ids)
				return nil
			},
			Full: func(context.Context) error {
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.down {
					return errors.New("connection refused")
				}
				f.fulls++
				return nil
			},
			Backoff: retry.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		})
	}()

	// A full load after connecting.
	eventually(t, "the first full load", func() bool { _, fulls, _ := f.state(); return fulls == 1 })
	eventually(t, "the metrics of the first load", func() bool {
		return metric(t, "switchboard_mirror_listen_connected", "test") == 1 && metric(t, "switchboard_mirror_reloads_total", "test") == 1
	})
	if at := metric(t, "switchboard_mirror_last_reload_timestamp_seconds", "test"); at < float64(time.Now().Unix()-5) {
		t.Fatalf("last reload at %v", at)
	}
	// A burst of notifications is reloaded in one batch after the debounce.
	for _, p := range []string{"3", "1", "x", "2", "1"} {
		f.notify(p)
	}
	eventually(t, "the batch", func() bool { _, _, b := f.state(); return len(b) == 1 })
	if _, _, b := f.state(); !slices.Equal(b[0], []int64{1, 2, 3}) {
		t.Fatalf("batch %v, want [1 2 3]", b[0])
	}

	// An outage: the connection drops and cannot be reopened for a while.
	f.setDown(true)
	time.Sleep(300 * time.Millisecond)
	if c := metric(t, "switchboard_mirror_listen_connected", "test"); c != 0 {
		t.Errorf("connected %v during the outage", c)
	}
	f.setDown(false)
	eventually(t, "a reconnect and a full load", func() bool {
		conns, fulls, _ := f.state()
		return conns == 2 && fulls == 2
	})
	eventually(t, "the metrics after the outage", func() bool {
		// the batch, then the full load after the reconnect
		return metric(t, "switchboard_mirror_listen_connected", "test") == 1 && metric(t, "switchboard_mirror_reloads_total", "test") == 3
	})
	f.notify("7")
	eventually(t, "the second batch", func() bool { _, _, b := f.state(); return len(b) == 2 })
	cancel()
	<-done
	if m := metrics(); strings.Contains(string(m), `mirror="test"`) {
		t.Errorf("a stopped mirror still reports:\n%s", m)
	}

	// The outage is two lines (lost, restored), however many attempts it took.
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message+" "+e.ContextMap()["task"].(string))
	}
	want := []string{"background task failing; retrying with backoff test listen", "background task recovered test listen"}
	if !slices.Equal(got, want) {
		t.Fatalf("log lines %q, want %q", got, want)
	}
	if f := logs.All()[1].ContextMap()["failures"].(int64); f < 3 {
		t.Errorf("%d failed connects in 300 ms, want several (backoff 10-50 ms)", f)
	}
}

// metrics renders the mirrors' families.
func metrics() []byte {
	m := httpio.NewMetrics()
	RegisterMetrics(m)
	return m.Append(nil)
}

// metric returns the value of family{mirror="name"}, or -1 when there is no such line.
func metric(t *testing.T, family, name string) float64 {
	t.Helper()
	prefix := family + `{mirror="` + name + `"} `
	for line := range strings.Lines(string(metrics())) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return -1
}

// TestMirrorRetriesFailedReload keeps the keys of a failed reload and retries them.
func TestMirrorRetriesFailedReload(t *testing.T) {
	var mu sync.Mutex
	fails := 3
	var got [][]int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeDB{}
	go Run(ctx, Config[int64]{
		Name:   "retry",
		Listen: Listener(f.listen, "chan"),
		Notified: func(p string, add func(int64)) {
			id, _ := strconv.ParseInt(p, 10, 64)
			add(id)
		},
		Reload: func(_ context.Context, ids []int64) error {
			mu.Lock()
			defer mu.Unlock()
			if fails > 0 {
				fails--
				return errors.New("deadlock detected")
			}
			got = append(got, ids)
			return nil
		},
		Backoff: retry.Backoff{Min: 5 * time.Millisecond, Max: 20 * time.Millisecond},
	})
	eventually(t, "the connection", func() bool { c, _, _ := f.state(); return c == 1 })
	f.notify("5")
	eventually(t, "the retried reload", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
	if !slices.Equal(got[0], []int64{5}) {
		t.Fatalf("reloaded %v, want [5]", got[0])
	}
}

// TestIDs: a payload of one id or a list of ids yields each id; what is not an id is skipped.
func TestIDs(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    []int64
	}{
		{"42", []int64{42}},
		{"1,2,3", []int64{1, 2, 3}},
		{"7,x,,-1", []int64{7, -1}},
		{"", nil},
		{"99999999999999999999", nil},
	} {
		var got []int64
		IDs(c.payload, func(id int64) { got = append(got, id) })
		if !slices.Equal(got, c.want) {
			t.Errorf("IDs(%q) = %v, want %v", c.payload, got, c.want)
		}
	}
}
