package bench

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
)

// partitionIDs is the span of each partition of sessions the seed adds: after a year of
// sessions (PastSessions), PartitionDays of them at the past rate, as serve's sweeper sizes
// them (PartitionPolicy.Period); else seedPartitionIDs.
func (m *Market) partitionIDs() int64 {
	days := cmp.Or(m.PartitionDays, 30)
	period := int64(float64(m.PastSessions) * float64(time.Duration(days)*24*time.Hour) / float64(pastSpan))
	return max(period, seedPartitionIDs)
}

// seedPartitionIDs is the span of each partition of sessions the seed adds: the serve
// sweeper's smallest (persistence.PartitionPolicy.MinIDs, a tid block), as a new marketplace
// would have.
const seedPartitionIDs = 1 << 20

// partitionSessions adds partitions of sessions (partitioned by ranges of id, migration 0036)
// of span ids each (ending where a tid block ends, as the sweeper's do: migration 0043) until
// the ids the next n rows will take have one: an insert whose id has no partition fails, and
// the serve sweeper keeps only a few partitions ahead of the sequence.
func partitionSessions(ctx context.Context, tx pgx.Tx, n, span int64) error {
	var next, top int64
	if err := tx.QueryRow(ctx, `SELECT (SELECT last_value + 1 FROM sessions_id_seq),
		(SELECT coalesce(max(id_to), 1) FROM session_partitions)`).Scan(&next, &top); err != nil {
		return fmt.Errorf("session partitions: %w", err)
	}
	for top <= next+n {
		if err := tx.QueryRow(ctx, `WITH e AS (SELECT switchboard_session_partition_end($1, $2) AS hi)
			SELECT hi FROM e, switchboard_add_session_partition($1, (SELECT hi FROM e))`, top, span).Scan(&top); err != nil {
			return fmt.Errorf("add session partition: %w", err)
		}
	}
	return nil
}

// dropIndexes drops the indexes of table that back no constraint and returns the
// statements that recreate them. An index of a partitioned table is recreated on every partition (its catalog
// definition reads "ON ONLY", which would build it on the parent alone, left invalid).
func dropIndexes(ctx context.Context, tx pgx.Tx, table string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename = $1
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`, table)
	if err != nil {
		return nil, err
	}
	var names, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			rows.Close()
			return nil, err
		}
		names, defs = append(names, n), append(defs, strings.Replace(d, " ON ONLY ", " ON ", 1))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{n}.Sanitize()); err != nil {
			return nil, err
		}
	}
	return defs, nil
}

// pastSpan is the time the past sessions cover: the eleven months before the market's own
// month of history (synth draws entries over the last 30 days).
const (
	pastSpan   = 335 * 24 * time.Hour
	pastLatest = 30 * 24 * time.Hour
	// pastOpen is how many closed campaigns were in field at once: a past session goes to
	// one of the pastOpen campaigns around its time, so each campaign is in field for about a
	// week at a hundred thousand closed campaigns.
	pastOpen = 2000
)

// copyPastSessions writes m.PastSessions sessions of closed campaigns spread evenly over the
// eleven months before the market's history, oldest first with ids 1..PastSessions (ids
// grow with time, as the id sequence makes them), each with a tid that names its id block
// as serve's tids do; and the closed campaigns (and their projects) they belong to. The
// partitions are sized as serve's sweeper sizes them: a month of sessions each at this rate.
func copyPastSessions(ctx context.Context, tx pgx.Tx, m *Market, now time.Time, rows map[string]int64) error {
	n := m.PastSessions
	if n <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(m.panelSeed), 11))
	first := int64(len(m.Campaigns)) + 1
	k := m.PastCampaigns()
	start := now.Add(-pastLatest - pastSpan)
	step := pastSpan / time.Duration(n)
	open := min(pastOpen, k)
	// Campaign first+i is in field while the window of pastOpen campaigns the sessions go
	// to covers it.
	at := func(i int64) time.Time {
		return start.Add(time.Duration(float64(pastSpan) * float64(min(max(i, 0), k)) / float64(k)))
	}
	link := SurveyHost + "/s/closed?tid={ID}"
	var projects, campaigns [][]any
	for c := first; c < first+k; c++ {
		b, name := m.BuyerOf(c).ID, fmt.Sprintf("Bench closed study %d", c)
		status := int16(4) // archived
		if c%10 == 0 {
			status = 6 // reconciled
		}
		i := c - first
		projects = append(projects, []any{c, b, name, at(i - open/2)})
		campaigns = append(campaigns, []any{c, b, c, name, int32(150), int32(150), int32(10), int32(40), status, int32(15),
			link, int32(1), []int16{0, 1, 2}, at(i - open/2), at(i + open/2)})
	}
	for _, t := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"projects", []string{"id", "buyer_id", "name", "created_at"}, projects},
		{"campaigns", []string{"id", "buyer_id", "project_id", "name", "cpi_cents", "cpi_bid_cents", "days_in_field",
			"incidence", "status", "length_of_interview", "supplier_link", "country_language_id", "supported_devices",
			"created_at", "status_changed_at"}, campaigns},
	} {
		c, err := tx.CopyFrom(ctx, pgx.Identifier{t.table}, t.cols, pgx.CopyFromRows(t.rows))
		rows[t.table] += c
		if err != nil {
			return fmt.Errorf("copy closed %s: %w", t.table, err)
		}
	}
	if err := partitionSessions(ctx, tx, n, m.partitionIDs()); err != nil {
		return err
	}
	var random [16]byte
	np := int64(m.panel)
	id := int64(0)
	c, err := tx.CopyFrom(ctx, pgx.Identifier{"sessions"},
		[]string{"id", "tid", "campaign_id", "buyer_id", "publisher_id", "participant_id", "entered_at", "outcome", "outcome_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if id >= n {
				return nil, nil
			}
			id++
			// Campaigns in field around this session's time: a window of pastOpen that moves
			// through the closed campaigns as time goes on.
			camp := first + min(max((id-1)*k/n+r.Int64N(open)-open/2, 0), k-1)
			for i := range random {
				random[i] = byte(r.Uint32())
			}
			tid := persistence.SessionTID(hex.EncodeToString(random[:]), id)
			at := start.Add(time.Duration(id) * step)
			return []any{id, tid, camp, m.BuyerOf(camp).ID, m.Publisher.ID, r.Int64N(max(np, 1)) + 1,
				at, outcomes[r.IntN(len(outcomes))], at.Add(15 * time.Minute)}, nil
		}))
	rows["sessions"] += c
	if err != nil {
		return fmt.Errorf("copy past sessions: %w", err)
	}
	_, err = tx.Exec(ctx, `SELECT setval('sessions_id_seq', $1)`, n)
	return err
}
