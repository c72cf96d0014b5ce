package persistence

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channels that keep every serve process's counters and panel current
// (docs/architecture.md, "Counting across processes").
const (
	// CountsChannel carries comma-separated ids of campaigns whose counts changed; listeners
	// re-read those campaigns' counts from the database. A payload whose first field is
	// "q" names campaigns of which only the quota counts changed (ParseCounts).
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

// CountRows are the counts one read returned. A caller that reads counts again and again
// (the counters' mirror, several times a second under entries) passes the same CountRows
// to every read: each read empties it and reuses what its slices have grown to.
type CountRows struct {
	Quotas    []QuotaCount
	Campaigns []CampaignCount
}

// Counts reads into rows the counts of the given campaigns, or of every active campaign
// when ids is nil, in one snapshot.
func (db *FeedStore) Counts(ctx context.Context, ids []int64, rows *CountRows) error {
	if ids != nil {
		return db.counts(ctx, rows, `campaign_id = ANY($1)`, []any{ids}, []any{ids})
	}
	const active = `campaign_id IN (SELECT id FROM campaigns WHERE status = 2)`
	return db.counts(ctx, rows, active, []any{}, []any{})
}

// CountsOf reads into rows, in one snapshot, the quota and campaign counts of the campaigns
// whole and only the quota counts of the campaigns quotasOnly (the lists may overlap: an id
// in both is read wholly, its quota rows once): what a listener of CountsChannel re-reads. A campaign's campaign counts (today's
// completes, its outcomes) change only with outcomes; the entries that move its quota
// counts thousands of times a second would otherwise have every process aggregate its
// daily counts again each time, which cost more than the rest of the re-read.
func (db *FeedStore) CountsOf(ctx context.Context, whole, quotasOnly []int64, rows *CountRows) error {
	quotas := whole
	if len(quotasOnly) > 0 {
		quotas = append(slices.Clip(whole), quotasOnly...)
	}
	var daily []any
	if len(whole) > 0 {
		daily = []any{whole}
	}
	return db.counts(ctx, rows, `campaign_id = ANY($1)`, []any{quotas}, daily)
}

// CountsAfter reads into rows, in one snapshot, the counts of at most limit active
// campaigns whose id is above after, in id order, and returns the largest id read (0 when
// none was left: the next call starts over). It lets a periodic reconciliation walk a large
// market a slice at a time, at a cost that does not grow with the market.
func (db *FeedStore) CountsAfter(ctx context.Context, after int64, limit int, rows *CountRows) (int64, error) {
	rows.Quotas, rows.Campaigns = rows.Quotas[:0], rows.Campaigns[:0]
	var last int64
	if err := db.Pool.QueryRow(ctx, `SELECT COALESCE(max(id), 0) FROM (SELECT id FROM campaigns
		WHERE status = 2 AND id > $1 ORDER BY id LIMIT $2) s`, after, limit).Scan(&last); err != nil {
		return 0, classify(err)
	}
	if last == 0 {
		return 0, nil
	}
	err := db.counts(ctx, rows, `campaign_id > $1 AND campaign_id <= $2
		AND campaign_id IN (SELECT id FROM campaigns WHERE status = 2 AND id > $1 AND id <= $2)`,
		[]any{after, last}, []any{after, last})
	return last, err
}

// counts reads into out, in one snapshot, the quota counts of the campaigns filter selects
// with quotaArgs and the campaign counts of those it selects with campaignArgs (nil: none).
func (db *FeedStore) counts(ctx context.Context, out *CountRows, filter string, quotaArgs, campaignArgs []any) error {
	// One row value each, scanned into through one argument list: rows cost no allocation.
	var q QuotaCount
	var c CampaignCount
	quotaDest := []any{&q.QuotaID, &q.CampaignID, &q.Completes, &q.InProgress, &q.Entries}
	campaignDest := []any{&c.CampaignID, &c.Day, &c.DayCompletes, &c.Outcomes, &c.Completes}
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// Emptied here, not before: a retried transaction reads them again.
		out.Quotas, out.Campaigns = out.Quotas[:0], out.Campaigns[:0]
		rows, err := tx.Query(ctx, `SELECT id, campaign_id, completes, in_progress, entries FROM campaign_quotas WHERE `+filter, quotaArgs...)
		if err != nil {
			return err
		}
		m := db.Participants.meter() // the whole market's counts are a load of their own at start-up
		for rows.Next() {
			m.row(ctx)
			if err := rows.Scan(quotaDest...); err != nil {
				rows.Close()
				return err
			}
			out.Quotas = append(out.Quotas, q)
		}
		rows.Close()
		if err := rows.Err(); err != nil || campaignArgs == nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT campaign_id, (now() AT TIME ZONE 'UTC')::date,
			COALESCE(sum(completes) FILTER (WHERE day = (now() AT TIME ZONE 'UTC')::date), 0), sum(outcomes), sum(completes)
			FROM campaign_daily_counts WHERE `+filter+` GROUP BY campaign_id`, campaignArgs...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m.row(ctx)
			if err := rows.Scan(campaignDest...); err != nil {
				return err
			}
			out.Campaigns = append(out.Campaigns, c)
		}
		return rows.Err()
	})
	if err != nil {
		out.Quotas, out.Campaigns = out.Quotas[:0], out.Campaigns[:0]
	}
	return classify(err)
}

// NotifyCounts announces campaigns whose counts changed (outside any transaction: the
// changes are committed already).
func (db *FeedStore) NotifyCounts(ctx context.Context, ids []int64) error {
	return db.notifyCounts(ctx, "", ids)
}

// NotifyQuotaCounts announces campaigns of which only the quota counts changed (admitted
// entries), which listeners re-read alone (CountsOf). A listener that does not know the
// payload's "q" field re-reads the campaigns wholly: processes of the release before keep
// their counts right beside this one's.
func (db *FeedStore) NotifyQuotaCounts(ctx context.Context, ids []int64) error {
	return db.notifyCounts(ctx, quotasOnlyField, ids)
}

// quotasOnlyField opens a CountsChannel payload that names campaigns whose quota counts
// alone changed.
const quotasOnlyField = "q"

// ParseCounts passes add the campaigns a CountsChannel payload names, and whether only
// their quota counts changed; fields that are not ids are skipped.
func ParseCounts(payload string, add func(campaignID int64, quotasOnly bool)) {
	rest, quotasOnly := strings.CutPrefix(payload, quotasOnlyField+",")
	for f := range strings.SplitSeq(rest, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil {
			add(id, quotasOnly)
		}
	}
}

func (db *FeedStore) notifyCounts(ctx context.Context, prefix string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	for _, chunk := range chunkPayloads(prefix, ids) {
		if _, err := db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, CountsChannel, chunk); err != nil {
			return classify(err)
		}
	}
	return nil
}

// NotifyEntries announces admitted entries to the other processes' panels; items are
// "<participant>:<campaign>:<unix>" and origin names this process.
func (db *FeedStore) NotifyEntries(ctx context.Context, origin string, items []string) error {
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

// chunkPayloads joins ids into comma-separated payloads under NOTIFY's 8000-byte limit,
// each opened by the field prefix when there is one.
func chunkPayloads(prefix string, ids []int64) []string {
	var out []string
	var b []byte
	for _, id := range ids {
		if len(b) > 7900 {
			out = append(out, string(b))
			b = b[:0]
		}
		if len(b) == 0 && prefix != "" {
			b = append(b, prefix...)
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
