package admin_test

import (
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// writeFlow creates a campaign, adds three quotas and activates it over real HTTP, and
// returns the latency of each of the five write requests.
func writeFlow(b *testing.B, buyer *apptest.Buyer) []time.Duration {
	out := make([]time.Duration, 0, 5)
	timed := func(method, p string, body any, want int) []byte {
		req := buyer.Request(b, method, p, body)
		start := time.Now()
		r, err := buyer.Server().Try(req)
		out = append(out, time.Since(start))
		if err != nil || r.Status != want {
			// Errorf + Goexit rather than Fatalf: this also runs on worker goroutines.
			b.Errorf("%s %s: %v %d %s", method, p, err, r.Status, r.Body)
			runtime.Goexit()
		}
		return r.Body
	}
	var c struct {
		ID int64 `json:"id"`
	}
	body := timed("POST", "/api/v1/campaigns", campaignBody(), 201)
	apptest.Response{Body: body}.Decode(b, &c)
	qp := path("/api/v1/campaigns/%d/campaign_quotas", c.ID)
	timed("POST", qp, quotaBody(), 201)
	timed("POST", qp, map[string]any{"num_respondents": 50, "campaign_qualifications": []any{
		map[string]any{"question_id": 43, "pre_codes": []int{1}}, map[string]any{"question_id": 45, "pre_codes": []string{"94105", "10001"}}}}, 201)
	timed("POST", qp, map[string]any{"num_respondents": 500, "is_global": true, "campaign_qualifications": []any{}}, 201)
	timed("PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 2}, 200)
	return out
}

func reportLatencies(b *testing.B, all []time.Duration) {
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		i := int(p * float64(len(all)-1))
		return float64(all[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "ms/write-p50")
	b.ReportMetric(pct(0.99), "ms/write-p99")
	b.ReportMetric(float64(len(all))/float64(b.N), "writes/op")
}

// BenchmarkWrites: one op = create campaign + 3 quotas + activate (5 write requests).
func BenchmarkWrites(b *testing.B) {
	b.Run("sequential", func(b *testing.B) {
		s := apptest.Start(b, apptest.Options{RateLimit: -1})
		buyer := s.NewBuyer(b)
		writeFlow(b, buyer) // warm up connections and the auth cache
		var all []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			all = append(all, writeFlow(b, buyer)...)
		}
		b.StopTimer()
		reportLatencies(b, all)
	})
	b.Run("8-buyers", func(b *testing.B) {
		s := apptest.Start(b, apptest.Options{RateLimit: -1})
		const workers = 8
		buyers := make([]*apptest.Buyer, workers)
		for i := range buyers {
			buyers[i] = s.NewBuyer(b)
			writeFlow(b, buyers[i])
		}
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		next := make(chan struct{}, b.N)
		for i := 0; i < b.N; i++ {
			next <- struct{}{}
		}
		close(next)
		b.ResetTimer()
		for _, buyer := range buyers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for range next {
					mine = append(mine, writeFlow(b, buyer)...)
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		b.StopTimer()
		reportLatencies(b, all)
	})
}
