package supply

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/jsontext"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply/partners"
	"github.com/switchboard/switchboard/supply/quality"
)

const (
	benchCampaigns    = 10_000
	benchParticipants = 2_000
	benchToken        = "bench-token"
)

// benchAPI builds the interface in memory (no database): a synthetic market of 10k
// campaigns, a panel of synthetic participants and one publisher.
func benchAPI(tb testing.TB, cacheTTL time.Duration) (*API, []string) {
	tb.Helper()
	return benchAPIOf(tb, cacheTTL, benchCampaigns)
}

// benchAPIOf is benchAPI with a market of the given number of campaigns.
func benchAPIOf(tb testing.TB, cacheTTL time.Duration, campaigns int) (*API, []string) {
	tb.Helper()
	eng := engine.New(nil)
	eng.Load(synth.Market(campaigns, 1))
	panel := engine.NewPanel()
	users := make([]string, 0, benchParticipants)
	for _, p := range synth.Participants(benchParticipants, 2, campaigns) {
		u := "user-" + strconv.FormatInt(p.ID, 10)
		if _, err := panel.Upsert(1, u, p, synth.Now); err != nil {
			tb.Fatal(err)
		}
		users = append(users, u)
	}
	cfg := Config{PublicURL: "https://sb.example.test", CacheTTL: cacheTTL}.withDefaults()
	var err error
	a := &API{eng: eng, panel: panel, log: zap.NewNop(), cfg: cfg, now: func() int64 { return synth.Now },
		key: entrytoken.NewKey([]byte("0123456789abcdef0123456789abcdef")), catalog: testCatalog(tb),
		hot: newHotTiles(), mirror: &panelMirror{panel: panel, now: func() int64 { return synth.Now }, misses: make(chan panelMiss, 1), missSeen: map[panelMiss]int64{}}}
	if a.quality, err = quality.New(quality.Config{}, quality.Deps{Now: a.now}); err != nil { // supply/quality: IP checks, blocked set, sightings
		tb.Fatal(err)
	}
	// A limit the benchmark never reaches, so that its check is measured with the rest.
	a.partners = partners.Fixed(partners.Config{PublisherRateLimit: 1e9, PublisherRateBurst: 1 << 20}, a.key,
		[]persistence.Publisher{{ID: 1, CurrencyName: "Coins", ExchangeRate: 100, RevenueShare: 0.7, Environment: persistence.EnvStaging}},
		[][32]byte{sha256.Sum256([]byte(benchToken))})
	a.cache = newAnswerCache(cfg.CacheTTL, cfg.CacheMaxBytes)
	a.urlEntry = jsontext.AppendEscaped([]byte{'"'}, cfg.PublicURL+Prefix+"/entry?token=")
	a.urlProfile = jsontext.AppendEscaped([]byte{'"'}, cfg.PublicURL+Prefix+"/profile?token=")
	a.urlSupport = jsontext.AppendEscaped([]byte{'"'}, cfg.PublicURL+"/support?token=")
	// A closed minute so that hot tiles are decided.
	served := make([]engine.Offer, 1000)
	for i := range served {
		served[i].EPC = float64(i) / 500
	}
	a.hot.record(served)
	a.hot.roll()
	return a, users
}

func benchRequest(ctx *fasthttp.RequestCtx, user string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.SetRequestURI("/supply_api/v4/campaigns?user_ip=73.15.20.7&device_type=1")
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.Header.Set("X-Api-Token", benchToken)
	ctx.Request.Header.Set("X-User-Identifier", user)
	ctx.Request.Header.Set("X-Device-Identifier", "AEBE52E7-03EE-455A-B3C4-E57283966239")
}

func TestBenchHarnessAnswers(t *testing.T) {
	a, users := benchAPI(t, -1)
	var ctx fasthttp.RequestCtx
	nonEmpty := 0
	for _, u := range users[:200] {
		benchRequest(&ctx, u)
		a.campaigns(&ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		var o struct {
			Surveys []struct {
				Identifier string  `json:"identifier"`
				EPC        float64 `json:"epc"`
			} `json:"surveys"`
		}
		if err := json.Unmarshal(ctx.Response.Body(), &o); err != nil {
			t.Fatalf("invalid JSON %s: %v", ctx.Response.Body(), err)
		}
		if len(o.Surveys) > 30 {
			t.Fatalf("%d surveys", len(o.Surveys))
		}
		for i := 1; i < len(o.Surveys); i++ {
			if o.Surveys[i].EPC > o.Surveys[i-1].EPC {
				t.Fatal("surveys not ordered by epc")
			}
		}
		if len(o.Surveys) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 100 {
		t.Fatalf("only %d of 200 synthetic participants got offers", nonEmpty)
	}
}

// BenchmarkCampaigns measures the GET /campaigns handler in process (no network): request
// parsing, authentication, panel read, matching against 10k campaigns, signing 31 tokens and
// encoding. "miss" computes every answer (cache off); "hit" answers a repeat request from the
// answer cache.
func BenchmarkCampaigns(b *testing.B) {
	b.Run("miss", func(b *testing.B) {
		a, users := benchAPI(b, -1)
		timeMiss(b, a, users)
	})
	b.Run("hit", func(b *testing.B) {
		a, users := benchAPI(b, time.Minute)
		var ctx fasthttp.RequestCtx
		for range 3 {
			benchRequest(&ctx, users[0])
			a.campaigns(&ctx)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			benchRequest(&ctx, users[0])
			a.campaigns(&ctx)
		}
	})
	// "miss-cached" is the production miss: the cache is on and every request is a key it
	// has not seen (a new device id each time), so each answer is computed and offered to
	// the cache. Each new device's sighting (supply/quality) is queued in buffers that grow until
	// a flush (none runs here) and remembered in a map that grows to its bound: the B/op.
	b.Run("miss-cached", func(b *testing.B) {
		a, users := benchAPI(b, time.Minute)
		req := deviceRequests(a, users)
		for i := range 100 { // warm the pools
			req(1_000_000 + i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			req(i)
			i++
		}
	})
	// "miss-stored": each key is asked for twice in a row, so every other request is a
	// second miss, which the cache admits and stores (the other is a first miss, not stored).
	b.Run("miss-stored", func(b *testing.B) {
		a, users := benchAPI(b, time.Minute)
		a.quality = nil // no sightings: what is measured is the answer and its storing
		req := deviceRequests(a, users)
		for i := range 20000 { // warm the pools and the cache's index
			req(1_000_000 + i/2)
		}
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			req(i / 2)
			i++
		}
	})
	b.Run("miss-parallel", func(b *testing.B) {
		a, users := benchAPI(b, -1)
		timeMissParallel(b, a, users)
	})
	// "miss-mux" and "hit-mux" are "miss" and "hit" served through the server's mux, which
	// counts every answer by route and status and times it into the latency histogram:
	// what the metrics cost the offers path.
	b.Run("miss-mux", func(b *testing.B) {
		a, users := benchAPI(b, -1)
		h := muxed(a)
		var ctx fasthttp.RequestCtx
		for i := range 100 { // warm the pools
			benchRequest(&ctx, users[i%len(users)])
			h(&ctx)
		}
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			benchRequest(&ctx, users[i%len(users)])
			h(&ctx)
			i++
		}
	})
	b.Run("hit-mux", func(b *testing.B) {
		a, users := benchAPI(b, time.Minute)
		h := muxed(a)
		var ctx fasthttp.RequestCtx
		for range 3 {
			benchRequest(&ctx, users[0])
			h(&ctx)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			benchRequest(&ctx, users[0])
			h(&ctx)
		}
	})
	b.Run("unprofiled", func(b *testing.B) {
		a, _ := benchAPI(b, -1)
		var ctx fasthttp.RequestCtx
		b.ReportAllocs()
		for b.Loop() {
			benchRequest(&ctx, "nobody")
			a.campaigns(&ctx)
		}
	})
}

// BenchmarkCampaignsMarket is "miss" and "miss-parallel" of BenchmarkCampaigns at 10k and
// at 100k campaigns, the size of a large marketplace: what of an answer grows with the
// market. Each size's market is built once (seconds at 100k).
func BenchmarkCampaignsMarket(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		a, users := benchAPIOf(b, -1, n)
		b.Run(fmt.Sprintf("campaigns=%d/miss", n), func(b *testing.B) { timeMiss(b, a, users) })
		b.Run(fmt.Sprintf("campaigns=%d/miss-parallel", n), func(b *testing.B) { timeMissParallel(b, a, users) })
	}
}

// muxed is a's offers handler behind a mux that records into a fresh metrics registry,
// as the server routes it.
func muxed(a *API) fasthttp.RequestHandler {
	mux := httpio.NewMux(httpio.NewMetrics(), zap.NewNop())
	mux.Handle(fasthttp.MethodGet, Prefix+"/campaigns", a.campaigns)
	return mux.Handler
}

// timeMiss times answers computed one at a time (the cache off in a), users in turn.
func timeMiss(b *testing.B, a *API, users []string) {
	var ctx fasthttp.RequestCtx
	for i := range 100 { // warm the pools
		benchRequest(&ctx, users[i%len(users)])
		a.campaigns(&ctx)
	}
	b.ReportAllocs()
	b.ResetTimer()
	surveys := 0
	i := 0
	for b.Loop() {
		benchRequest(&ctx, users[i%len(users)])
		a.campaigns(&ctx)
		surveys += len(ctx.Response.Body())
		i++
	}
	b.ReportMetric(float64(surveys)/float64(i), "bytes/answer")
}

// timeMissParallel is timeMiss on every CPU at once, as the server runs it: what the
// handlers share (hot-tile sampling, the panel's locks, counters) costs here what cache
// lines moving between cores cost; ns/op is per answer, over all CPUs.
func timeMissParallel(b *testing.B, a *API, users []string) {
	var warm fasthttp.RequestCtx
	for i := range 100 {
		benchRequest(&warm, users[i%len(users)])
		a.campaigns(&warm)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		i := int(next.Add(1)) * 7919
		for pb.Next() {
			benchRequest(&ctx, users[i%len(users)])
			a.campaigns(&ctx)
			i++
		}
	})
}

// BenchmarkAppendEPC compares the epc field written from integers with the shortest float
// formatting it replaced (the same text, TestAppendEPC).
func BenchmarkAppendEPC(b *testing.B) {
	epcs := make([]float64, 1024)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range epcs {
		epcs[i] = r.Float64() * 4
	}
	buf := make([]byte, 0, 64)
	b.Run("integers", func(b *testing.B) {
		i := 0
		for b.Loop() {
			buf = appendEPC(buf[:0], epcs[i&1023])
			i++
		}
	})
	b.Run("shortest-float", func(b *testing.B) {
		i := 0
		for b.Loop() {
			buf = strconv.AppendFloat(buf[:0], math.Round(epcs[i&1023]*1e4)/1e4, 'f', -1, 64)
			i++
		}
	})
}

// deviceRequests returns a function that sends GET /campaigns for user i (of users, in
// turn) from device "DEV-i": a key of the answer cache per i.
func deviceRequests(a *API, users []string) func(i int) {
	var ctx fasthttp.RequestCtx
	dev := make([]byte, 0, 32)
	return func(i int) {
		benchRequest(&ctx, users[i%len(users)])
		dev = strconv.AppendInt(append(dev[:0], "DEV-"...), int64(i), 10)
		ctx.Request.Header.SetBytesV("X-Device-Identifier", dev)
		a.campaigns(&ctx)
	}
}
