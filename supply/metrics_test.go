package supply

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/httpio"
)

// metricValue returns the value of the unlabelled sample of family in m's exposition.
func metricValue(t *testing.T, m *httpio.Metrics, family string) float64 {
	t.Helper()
	body := string(m.Append(nil))
	if !strings.Contains(body, "# TYPE "+family+" ") {
		t.Fatalf("no TYPE line for %s", family)
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), family+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no sample of %s", family)
	return 0
}

// TestAnswerCacheMetrics: the answer cache's hits, misses, size and evictions move with the
// requests of GET /campaigns.
func TestAnswerCacheMetrics(t *testing.T) {
	a, users := benchAPI(t, time.Minute)
	m := httpio.NewMetrics()
	a.RegisterMetrics(m)
	for _, f := range []string{"hits", "misses", "evictions"} {
		if v := metricValue(t, m, "switchboard_offers_cache_"+f+"_total"); v != 0 {
			t.Fatalf("%s %v before any request", f, v)
		}
	}
	var ctx fasthttp.RequestCtx
	for range 4 { // computed twice (the second is cached), then served twice
		benchRequest(&ctx, users[0])
		a.campaigns(&ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	if h, ms := metricValue(t, m, "switchboard_offers_cache_hits_total"), metricValue(t, m, "switchboard_offers_cache_misses_total"); h != 2 || ms != 2 {
		t.Fatalf("hits %v, misses %v; want 2 and 2", h, ms)
	}
	if w := metricValue(t, m, "switchboard_offers_cache_window_seconds"); w != float64(a.cache.ttlSeconds()) {
		t.Fatalf("window %v s with one answer cached, want the TTL's %d", w, a.cache.ttlSeconds())
	}
	size := metricValue(t, m, "switchboard_offers_cache_size_bytes")
	if size < float64(len(ctx.Response.Body())) {
		t.Fatalf("size %v bytes, answer of %d", size, len(ctx.Response.Body()))
	}
	a.cache.dropUser(1, []byte(users[0]), []byte("AEBE52E7-03EE-455A-B3C4-E57283966239"))
	if e := metricValue(t, m, "switchboard_offers_cache_evictions_total"); e != 1 {
		t.Fatalf("evictions %v after dropping the user, want 1", e)
	}
	if s := metricValue(t, m, "switchboard_offers_cache_size_bytes"); s != size {
		t.Fatalf("size %v after the only answer was dropped, want %v (the ring's bytes stay until written over)", s, size)
	}
	benchRequest(&ctx, users[0])
	a.campaigns(&ctx)
	if ms := metricValue(t, m, "switchboard_offers_cache_misses_total"); ms != 3 {
		t.Fatalf("misses %v after the answer was dropped, want 3", ms)
	}
}
