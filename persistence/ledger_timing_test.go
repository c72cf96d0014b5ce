package persistence_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/cluster"
)

// TestLedgerCallbackCost is the A/B of the ledger's cost on the callbacks' PostgreSQL time:
// batches of 8 completes recorded by the callbacks' statement with its ledger insert,
// without it, and with it into a copy of the ledger without its trigger, in turn, on one
// durable cluster of its own (fsync and synchronous commit on, as in production: the
// throwaway clusters of the other tests commit without flushing, which would leave the
// statement alone on the scale). Set SWITCHBOARD_TIMING=1 to run it
// (SWITCHBOARD_TIMING_BATCHES: batches of each, 400 by default).
func TestLedgerCallbackCost(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TIMING") == "" {
		t.Skip("set SWITCHBOARD_TIMING=1 to run the ledger's callback cost A/B")
	}
	batches := 400
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_BATCHES")); err == nil && v > 0 {
		batches = v
	}
	ctx := context.Background()
	db := durableDB(t)
	buyer := newBuyer(t, db, "ab@example.test")
	pub := newPublisher(t, db)
	camp, quota := newActiveCampaign(t, db, buyer, "ab", nil)
	if _, err := db.Pool.Exec(ctx, `UPDATE campaign_quotas SET num_respondents = 1000000 WHERE id = $1`, quota); err != nil {
		t.Fatal(err)
	}
	const per = 8
	n := 3 * batches * per
	rows, err := db.Pool.Query(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, quota_ids, entered_at)
		SELECT md5(g::text), $1, $2, $3, ARRAY[$4::bigint], now() FROM generate_series(1, $5) g RETURNING id, tid`, camp, buyer, pub, quota, n)
	if err != nil {
		t.Fatal(err)
	}
	var ss []persistence.Session
	for rows.Next() {
		s := persistence.Session{PublisherID: pub, CPICents: 200, CampaignID: camp}
		if err := rows.Scan(&s.ID, &s.TID); err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ss, func(a, b persistence.Session) int { return int(a.ID - b.ID) })
	if _, err := db.Pool.Exec(ctx, `UPDATE campaign_quotas SET in_progress = $2 WHERE id = $1`, quota, n); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE sessions`); err != nil {
		t.Fatal(err)
	}
	// The third arm writes to a copy of ledger_events with its indexes and constraints but
	// no trigger: what the closed months' trigger (migration 0053) costs.
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE ledger_events_bare (LIKE ledger_events INCLUDING ALL)`); err != nil {
		t.Fatal(err)
	}
	arms := []string{"ledger_events", "", "ledger_events_bare"}
	times := make([][]time.Duration, len(arms))
	for i := 0; i < len(arms)*batches; i++ {
		arm := (i + i/len(arms)) % len(arms) // rotate which goes first
		d, err := db.RecordCompletesTimed(ctx, ss[i*per:(i+1)*per], arms[arm])
		if err != nil {
			t.Fatal(err)
		}
		times[arm] = append(times[arm], d)
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	sum := func(ds []time.Duration) (s time.Duration) {
		for _, d := range ds {
			s += d
		}
		return s
	}
	with, without, bare := times[0], times[1], times[2]
	mw, mo, mb := median(with), median(without), median(bare)
	t.Logf("batches of %d completes, %d of each: with the ledger median %v total %v; without median %v total %v; median +%.1f%%, total +%.1f%%",
		per, batches, mw, sum(with), mo, sum(without), 100*(float64(mw)/float64(mo)-1), 100*(float64(sum(with))/float64(sum(without))-1))
	t.Logf("the ledger without the closed months' trigger: median %v total %v; median +%.1f%%, total +%.1f%% over no ledger",
		mb, sum(bare), 100*(float64(mb)/float64(mo)-1), 100*(float64(sum(bare))/float64(sum(without))-1))
	var events int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger_events`).Scan(&events); err != nil || events != batches*per {
		t.Fatalf("%d ledger events (%v), want %d", events, err, batches*per)
	}
}

// durableDB is a migrated database on a cluster of the test's own that flushes every
// commit, as a production server does.
func durableDB(t *testing.T) *persistence.DB {
	t.Helper()
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir(), Fsync: true, Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	if err := c.CreateDatabase(ctx, "ledger_ab", ""); err != nil {
		t.Fatal(err)
	}
	return migratedAt(t, c.URL("ledger_ab"))
}
