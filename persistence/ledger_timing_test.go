package persistence_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/cluster"
)

// TestLedgerCallbackCost is the A/B of the ledger's cost on the callbacks' PostgreSQL time:
// batches of 8 completes recorded by the callbacks' statement without its ledger insert,
// with it, and with it into copies of the ledger that each lack some of its pieces (its
// trigger; its index by campaign; its trigger and every index but the primary key; its
// trigger and every index), on one durable cluster of its own (fsync and synchronous commit
// on, as in production: the throwaway clusters of the other tests commit without flushing,
// which would leave the statement alone on the scale).
// Each round runs every arm once, in an order that rotates from round to round; an arm's
// cost is the median over the rounds of its batch's time over the same round's batch
// without the ledger, with a 95% confidence interval from the order statistics (no
// assumption on the times' distribution), and the ratio of its total time to the total
// without, with a 95% bootstrap interval over the rounds. With SWITCHBOARD_TIMING_MAX_PCT
// set, the ledger's upper bounds (median and total) must be at most that many percent.
// Set SWITCHBOARD_TIMING=1 to run it (SWITCHBOARD_TIMING_BATCHES: rounds, 1,000 by default;
// SWITCHBOARD_TIMING_PER: completes per batch, 8 by default).
func TestLedgerCallbackCost(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TIMING") == "" {
		t.Skip("set SWITCHBOARD_TIMING=1 to run the ledger's callback cost A/B")
	}
	rounds := 1000
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_BATCHES")); err == nil && v > 0 {
		rounds = v
	}
	ctx := context.Background()
	db := durableDB(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// The copies: LIKE copies the columns, constraints and indexes, never the triggers; each
	// copy takes back what its arm keeps of ledger_events' triggers and drops what it lacks.
	var trigger string
	if err := db.Pool.QueryRow(ctx, `SELECT pg_get_triggerdef(oid) FROM pg_trigger
		WHERE tgrelid = 'ledger_events'::regclass AND tgname = 'ledger_events_open_month'`).Scan(&trigger); err != nil {
		t.Fatal(err)
	}
	copyOf := func(name string, withTrigger bool, dropIndexes string) string {
		exec(`CREATE TABLE ` + name + ` (LIKE ledger_events INCLUDING ALL)`)
		if withTrigger {
			exec(replaceTable(trigger, name))
		}
		exec(`DO $$ DECLARE i text; BEGIN
			FOR i IN SELECT indexname FROM pg_indexes WHERE tablename = '` + name + `' AND indexdef ~ '` + dropIndexes + `' LOOP
				EXECUTE CASE WHEN i LIKE '%pkey' THEN 'ALTER TABLE ` + name + ` DROP CONSTRAINT ' ELSE 'DROP INDEX ' END || quote_ident(i);
			END LOOP; END $$`)
		return name
	}
	arms := []struct{ name, table string }{
		{"no ledger", ""},
		{"ledger", "ledger_events"},
		{"ledger without its trigger", copyOf("ledger_no_trigger", false, "^$")},
		{"ledger without its campaign index", copyOf("ledger_no_campaign", true, "buyer_id")},
		{"ledger with its primary key alone", copyOf("ledger_key_alone", false, "buyer_id|brin")},
		{"ledger without any index or trigger", copyOf("ledger_heap_alone", false, ".")},
	}

	buyer := newBuyer(t, db, "ab@example.test")
	pub := newPublisher(t, db)
	camp, quota := newActiveCampaign(t, db, buyer, "ab", nil)
	per := 8
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_TIMING_PER")); err == nil && v > 0 {
		per = v
	}
	n := len(arms) * rounds * per
	exec(`UPDATE campaign_quotas SET num_respondents = $2, in_progress = $2 WHERE id = $1`, quota, n)
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
	exec(`VACUUM ANALYZE sessions`)

	times := make([][]float64, len(arms)) // times[arm][round], in seconds
	wal := make([]float64, len(arms))     // WAL bytes of the arm's batches, read outside their times
	lsn := func() (l float64) {
		if err := db.Pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')`).Scan(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	for r := range rounds {
		for k := range arms {
			arm := (r + k) % len(arms) // rotate which goes first
			i := r*len(arms) + k
			before := lsn()
			d, err := db.RecordCompletesTimed(ctx, ss[i*per:(i+1)*per], arms[arm].table)
			if err != nil {
				t.Fatal(err)
			}
			wal[arm] += lsn() - before
			times[arm] = append(times[arm], d.Seconds())
		}
	}
	base := times[0]
	t.Logf("%d rounds of batches of %d completes; without the ledger: median %.2f ms, total %.2f s, WAL %.0f B a batch",
		rounds, per, 1000*medianOf(slices.Clone(base)), sumOf(base), wal[0]/float64(rounds))
	maxPct, _ := strconv.ParseFloat(os.Getenv("SWITCHBOARD_TIMING_MAX_PCT"), 64)
	for a := 1; a < len(arms); a++ {
		ratios := make([]float64, rounds)
		for r := range rounds {
			ratios[r] = times[a][r] / base[r]
		}
		m, lo, hi := medianInterval(ratios)
		tot, tlo, thi := totalRatioInterval(times[a], base)
		t.Logf("%-34s per-batch median %+5.1f%% [%+5.1f%%, %+5.1f%%]; total %+5.1f%% [%+5.1f%%, %+5.1f%%]; WAL %+5.1f%%",
			arms[a].name, pct(m), pct(lo), pct(hi), pct(tot), pct(tlo), pct(thi), pct(wal[a]/wal[0]))
		if a == 1 && maxPct > 0 && (pct(hi) > maxPct || pct(thi) > maxPct) {
			t.Errorf("the ledger adds up to %+.1f%% (median) and %+.1f%% (total) at 95%%, want at most %+.1f%%", pct(hi), pct(thi), maxPct)
		}
	}
	want := 0
	for _, a := range arms {
		if strings.HasPrefix(a.table, "ledger_events") {
			want += rounds * per
		}
	}
	var events int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger_events`).Scan(&events); err != nil || events != want {
		t.Fatalf("%d ledger events (%v), want %d", events, err, want)
	}
}

// replaceTable is trigger definition def (pg_get_triggerdef) on table instead.
func replaceTable(def, table string) string {
	return strings.Replace(def, " ON public.ledger_events ", " ON "+table+" ", 1)
}

func pct(r float64) float64 { return 100 * (r - 1) }

func sumOf(xs []float64) (s float64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// medianOf sorts xs and returns its median.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// medianInterval is the median of xs and its 95% confidence interval from the order
// statistics: the median lies between the sorted xs of ranks n/2 ∓ 1.96·√n/2.
func medianInterval(xs []float64) (m, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	k := 1.96 * math.Sqrt(n) / 2
	l, h := int(math.Floor(n/2-k)), int(math.Ceil(n/2+k))
	return s[len(s)/2], s[max(l, 0)], s[min(h, len(s)-1)]
}

// totalRatioInterval is sum(a)/sum(b) over paired rounds, with a 95% bootstrap interval
// (2,000 resamples of the rounds).
func totalRatioInterval(a, b []float64) (r, lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	rs := make([]float64, 2000)
	for i := range rs {
		var sa, sb float64
		for range a {
			j := rng.IntN(len(a))
			sa, sb = sa+a[j], sb+b[j]
		}
		rs[i] = sa / sb
	}
	slices.Sort(rs)
	return sumOf(a) / sumOf(b), rs[len(rs)*25/1000], rs[len(rs)*975/1000]
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
