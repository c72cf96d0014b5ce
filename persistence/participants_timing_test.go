package persistence_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// BenchmarkLoadActiveParticipants fills a fresh database with N participants
// (SWITCHBOARD_PANEL_N, default 1,000,000) with a typical profile (AGE,
// GENDER, ZIP and five more answers, 12-byte user identifiers), then streams
// them into an empty engine.Panel the way the start-up does (Reserve from PostgreSQL's
// estimate, the supply panel sync's load, Trim). It
// reports load-s (the whole load), participants/s and the panel's live heap
// per participant; its read part reports the time PostgreSQL takes to send the rows (read
// and dropped, no decoding). Run with
// go test ./persistence -run '^$' -bench LoadActiveParticipants -benchtime 1x
func BenchmarkLoadActiveParticipants(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_PANEL_N")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var pub int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO publishers (name, currency_name, exchange_rate, revenue_share,
		redirect_url, api_secret, environment, token_hash)
		VALUES ('bench', 'points', 1, 0.5, 'https://p.example/r', 's', 'live', '\x01') RETURNING id`).Scan(&pub)
	if err != nil {
		b.Fatal(err)
	}
	fill := time.Now()
	_, err = db.Pool.Exec(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
		SELECT $1, 'u' || (100000000000 + i)::text, (SELECT min(id) FROM countries),
			jsonb_build_object('42', jsonb_build_array(18 + i % 62), '43', jsonb_build_array(1 + i % 2),
				'45', jsonb_build_array(lpad((i % 40000)::text, 5, '0')), '47', jsonb_build_array(1 + i % 14),
				'61', jsonb_build_array(1 + i % 26), '96', jsonb_build_array(1 + i % 4),
				'113', jsonb_build_array(1 + i % 16), '633', jsonb_build_array(1 + i % 9))
		FROM generate_series(1, $2::int) AS i`, pub, n)
	if err != nil {
		b.Fatal(err)
	}
	// What autovacuum does to a table this size soon after: hint bits set (a first scan would
	// write every page), the estimate the start-up reads.
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE participants`); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d participants in %v", n, time.Since(fill))
	since := time.Now().Add(-time.Hour)
	// read: PostgreSQL's side and the wire alone (the load's query, rows read and dropped).
	b.Run("read", func(b *testing.B) {
		for range b.N {
			start := time.Now()
			rows, err := db.Pool.Query(ctx, `SELECT id, publisher_id, user_identifier, country_id, profile,
				extract(epoch FROM last_active_at)::bigint FROM participants WHERE last_active_at >= $1`, since)
			if err != nil {
				b.Fatal(err)
			}
			read := 0
			for rows.Next() {
				read += len(rows.RawValues())
			}
			rows.Close()
			if err := rows.Err(); err != nil || read != 6*n {
				b.Fatalf("read %d values: %v", read, err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "read-s")
		}
	})
	// load: as the start-up calls it (fn one row at a time); load-concurrent: fn called by
	// every stream at once.
	for _, concurrent := range []bool{false, true} {
		name := "load"
		if concurrent {
			name = "load-concurrent"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				before := heapInUse()
				start := time.Now()
				pl := engine.NewPanel()
				estimate, err := db.Participants.EstimateParticipants(ctx)
				if err != nil {
					b.Fatal(err)
				}
				pl.Reserve(estimate)
				var loaded atomic.Int64
				put := func(p persistence.PanelParticipant) error {
					loaded.Add(1)
					return pl.Put(p.PublisherID, p.User, p.Participant, p.LastActive)
				}
				entry := func(participant, campaign, at int64) { pl.RecordEntry(participant, campaign, at) }
				if concurrent {
					err = db.Participants.LoadActiveParticipantsConcurrently(ctx, since, put, entry)
				} else {
					err = db.Participants.LoadActiveParticipants(ctx, since, put, entry)
				}
				if err != nil || loaded.Load() != int64(n) {
					b.Fatalf("loaded %d of %d: %v", loaded.Load(), n, err)
				}
				pl.Trim()
				took := time.Since(start)
				after := heapInUse()
				b.ReportMetric(took.Seconds(), "load-s")
				b.ReportMetric(float64(n)/took.Seconds(), "participants/s")
				b.ReportMetric(float64(after-before)/float64(n), "bytes/participant")
				runtime.KeepAlive(pl)
			}
		})
	}
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTouchParticipants times one batch of the activity write-back (10,000 ids of a
// table of 200,000 participants, the write-back's batch): "new day" when the stored
// last_active_at lies on an earlier UTC day (each row rewritten), "same day" when it lies
// earlier the same day (the rows only looked up, since last_active_at counts days).
// ms/batch is the median batch. Run with
// go test ./persistence -run '^$' -bench TouchParticipants -benchtime 10x
func BenchmarkTouchParticipants(b *testing.B) {
	const n, batch = 200_000, 10_000
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var pub int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO publishers (name, currency_name, exchange_rate, revenue_share,
		redirect_url, api_secret, environment, token_hash)
		VALUES ('bench', 'points', 1, 0.5, 'https://p.example/r', 's', 'live', '\x01') RETURNING id`).Scan(&pub)
	if err != nil {
		b.Fatal(err)
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
		SELECT $1, 'u' || (100000000000 + i)::text, (SELECT min(id) FROM countries),
			jsonb_build_object('42', jsonb_build_array(18 + i % 62), '43', jsonb_build_array(1 + i % 2),
				'45', jsonb_build_array(lpad((i % 40000)::text, 5, '0')))
		FROM generate_series(1, $2::int) AS i`, pub, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE participants`); err != nil {
		b.Fatal(err)
	}
	var first int64
	if err := db.Pool.QueryRow(ctx, `SELECT min(id) FROM participants`).Scan(&first); err != nil {
		b.Fatal(err)
	}
	day := time.Now().UTC().Truncate(24*time.Hour).Unix() + 3600
	for _, c := range []struct {
		name   string
		stored int64 // last_active_at before each batch, relative to day
	}{{"new day", -2 * 86400}, {"same day", -1800}} {
		b.Run(c.name, func(b *testing.B) {
			var lat []time.Duration
			k := 0
			for b.Loop() {
				b.StopTimer()
				from := first + int64(k%(n/batch))*batch
				k++
				if _, err := db.Pool.Exec(ctx, `UPDATE participants SET last_active_at = to_timestamp($1)
					WHERE id >= $2 AND id < $3`, day+c.stored, from, from+batch); err != nil {
					b.Fatal(err)
				}
				ids, ats := make([]int64, batch), make([]int64, batch)
				for i := range ids {
					ids[i], ats[i] = from+int64(i), day+int64(i%600)
				}
				b.StartTimer()
				start := time.Now()
				if err := db.Participants.TouchParticipants(ctx, ids, ats); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "ms/batch")
		})
	}
}
