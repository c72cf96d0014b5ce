package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestPrewarm: on a database seeded with past months, the relations read before the load
// are respondents with its indexes and the indexes of the partitions holding the active
// campaigns' sessions, not those of the months of closed campaigns before them; prewarm
// reads each of them, into shared buffers while they fit.
func TestPrewarm(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	m := GenerateMarket(40, 300, 5)
	m.PastSessions = 4500
	if _, err := Seed(ctx, url, m, true, time.Now(), zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A small year fits one partition; the seed's and the sweeper's layout of a large one is
	// what TestSeedPastSessions and persistence's tests check. Here the first partition
	// holds only sessions from before the oldest active campaign (it began long before),
	// and the next one the campaign's floor.
	var oldest, floor string
	if err := conn.QueryRow(ctx, `SELECT min(name), max(name) FILTER (WHERE id_from > 0) FROM session_partitions
		WHERE id_from < 12000000`).Scan(&oldest, &floor); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE session_partitions SET first_entered_at = now() - interval '400 days'
		WHERE name IN ($1, $2)`, oldest, floor); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT h.name, COALESCE(i.indrelid::regclass::text, '') FROM (`+hotRelationsSQL+`) h(name, size)
		LEFT JOIN pg_index i ON i.indexrelid = h.name::regclass`, persistence.StatusActive)
	if err != nil {
		t.Fatal(err)
	}
	hot := map[string]bool{}   // relation names
	tables := map[string]int{} // partitions with indexes in the set
	var name, table string
	if _, err := pgx.ForEachRow(rows, []any{&name, &table}, func() error {
		hot[name] = true
		if table != "" && table != "respondents" {
			tables[table]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	switch {
	case !hot["respondents"] || !hot["respondents_pkey"]:
		t.Errorf("hot set %v lacks respondents or its primary key", hot)
	case tables[oldest] > 0:
		t.Errorf("hot set %v holds %d indexes of %s, a month before the oldest active campaign", hot, tables[oldest], oldest)
	case tables[floor] == 0:
		t.Errorf("hot set %v lacks the indexes of %s, the partition the oldest active campaign's sessions start in", hot, floor)
	}
	pw, err := prewarm(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if pw.Relations != len(hot) || pw.Bytes <= 0 {
		t.Errorf("prewarm read %d relations, %d bytes; want the %d of the hot set", pw.Relations, pw.Bytes, len(hot))
	}
	// The test cluster's shared buffers hold this small a hot set whole.
	if pw.Buffered != pw.Bytes {
		t.Errorf("prewarm read %d of %d bytes into shared buffers, want all", pw.Buffered, pw.Bytes)
	}
}
