package app_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/bench"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// BenchmarkStartup seeds a market of SWITCHBOARD_STARTUP_CAMPAIGNS campaigns (default
// 100,000, bench.Seed) and SWITCHBOARD_STARTUP_PARTICIPANTS participants (default
// 1,000,000; the typical profile of persistence's BenchmarkLoadActiveParticipants), then
// starts the whole app over it and reports ready-s (app start until GET /readyz answers 200:
// engine, counters) and panel-s (until the panel holds every participant). Run with
// go test ./cmd/switchboard/app -run '^$' -bench Startup -benchtime 1x -timeout 60m
func BenchmarkStartup(b *testing.B) {
	campaigns, participants := envInt("SWITCHBOARD_STARTUP_CAMPAIGNS", 100_000), envInt("SWITCHBOARD_STARTUP_PARTICIPANTS", 1_000_000)
	ctx := context.Background()
	url := pgtest.URL(b)
	seeded := time.Now()
	m := bench.GenerateMarket(campaigns, 0, 1)
	if _, err := bench.Seed(ctx, url, m, false, time.Now(), zap.NewNop()); err != nil {
		b.Fatal(err)
	}
	db, err := persistence.Open(ctx, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	_, err = db.Pool.Exec(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
		SELECT $1, 'u' || (100000000000 + i)::text, (SELECT min(id) FROM countries),
			jsonb_build_object('42', jsonb_build_array(18 + i % 62), '43', jsonb_build_array(1 + i % 2),
				'45', jsonb_build_array(lpad((i % 40000)::text, 5, '0')), '47', jsonb_build_array(1 + i % 14),
				'61', jsonb_build_array(1 + i % 26), '96', jsonb_build_array(1 + i % 4),
				'113', jsonb_build_array(1 + i % 16), '633', jsonb_build_array(1 + i % 9))
		FROM generate_series(1, $2::int) AS i`, m.Publisher.ID, participants)
	if err == nil {
		_, err = db.Pool.Exec(ctx, `VACUUM ANALYZE participants`)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d campaigns and %d participants in %v", campaigns, participants, time.Since(seeded))
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s := apptest.Start(b, apptest.Options{DatabaseURL: url})
		for {
			resp, err := s.Client.Get(s.URL + "/readyz")
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		ready := time.Since(start)
		<-s.App.Supply.Loaded()
		loaded := time.Since(start)
		if got := s.App.Panel.Len(); got != participants {
			b.Fatalf("panel holds %d of %d participants", got, participants)
		}
		b.ReportMetric(ready.Seconds(), "ready-s")
		b.ReportMetric(loaded.Seconds(), "panel-s")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
