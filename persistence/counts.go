package persistence

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channels that keep every serve process's counters and panel current
// (docs/architecture.md, "Counting across processes").
const (
	// CountsChannel carries comma-separated ids of campaigns whose counts changed; listeners
	// re-read those campaigns' counts from the database.
	CountsChannel = "switchboard_counts"
	// EntriesChannel carries "<origin>|<participant>:<campaign>:<unix>,..." for every admitted
	// entry, so that other processes' panels learn reentry history at once.
	EntriesChannel = "switchboard_entries"
)

// QuotaCount is a quota's authoritative counts.
type QuotaCount struct {
	QuotaID, CampaignID            int64
	Completes, InProgress, Entries int64
}

// CampaignCount is a campaign's authoritative statistics.
type CampaignCount struct {
	CampaignID   int64
	Day          time.Time // the UTC day DayCompletes belongs to (today)
	DayCompletes int64
	Outcomes     int64
	Completes    int64
}

// Counts reads the counts of the given campaigns, or of every active campaign when ids is
// nil, in one snapshot.
func (db *DB) Counts(ctx context.Context, ids []int64) ([]QuotaCount, []CampaignCount, error) {
	var qs []QuotaCount
	var cs []CampaignCount
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		filter := `campaign_id IN (SELECT id FROM campaigns WHERE status = 2)`
		args := []any{}
		if ids != nil {
			filter, args = `campaign_id = ANY($1)`, []any{ids}
		}
		rows, err := tx.Query(ctx, `SELECT id, campaign_id, completes, in_progress, entries FROM campaign_quotas WHERE `+filter, args...)
		if err != nil {
			return err
		}
		qs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (QuotaCount, error) {
			var q QuotaCount
			err := r.Scan(&q.QuotaID, &q.CampaignID, &q.Completes, &q.InProgress, &q.Entries)
			return q, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT campaign_id, (now() AT TIME ZONE 'UTC')::date,
			COALESCE(sum(completes) FILTER (WHERE day = (now() AT TIME ZONE 'UTC')::date), 0), sum(outcomes), sum(completes)
			FROM campaign_daily_counts WHERE `+filter+` GROUP BY campaign_id`, args...)
		if err != nil {
			return err
		}
		cs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (CampaignCount, error) {
			var c CampaignCount
			err := r.Scan(&c.CampaignID, &c.Day, &c.DayCompletes, &c.Outcomes, &c.Completes)
			return c, err
		})
		return err
	})
	return qs, cs, classify(err)
}

// NotifyCounts announces campaigns whose counts changed (outside any transaction: the
// changes are committed already).
func (db *DB) NotifyCounts(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	for _, chunk := range chunkPayloads(ids) {
		if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, CountsChannel, chunk); err != nil {
			return classify(err)
		}
	}
	return nil
}

// NotifyEntries announces admitted entries to the other processes' panels; items are
// "<participant>:<campaign>:<unix>" and origin names this process.
func (db *DB) NotifyEntries(ctx context.Context, origin string, items []string) error {
	for len(items) > 0 {
		var b strings.Builder
		b.WriteString(origin)
		b.WriteByte('|')
		n := 0
		for n < len(items) && b.Len()+len(items[n])+1 < 7900 {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(items[n])
			n++
		}
		if n == 0 {
			n = 1 // an absurdly long item: drop it
		} else if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, EntriesChannel, b.String()); err != nil {
			return classify(err)
		}
		items = items[n:]
	}
	return nil
}

// chunkPayloads joins ids into comma-separated payloads under NOTIFY's 8000-byte limit.
func chunkPayloads(ids []int64) []string {
	var out []string
	var b []byte
	for _, id := range ids {
		if len(b) > 7900 {
			out = append(out, string(b))
			b = b[:0]
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	if len(b) > 0 {
		out = append(out, string(b))
	}
	return out
}
