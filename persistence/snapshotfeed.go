package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// A process started from a snapshot catches up from the database: what changed at or after
// the position the snapshot is consistent at. Campaigns and participants record the
// transaction that last changed them (change_xid, set by a trigger on every insert and
// update: migration 0055); entries are sessions, whose ids the position bounds. The counters
// (campaign_quotas, campaign_daily_counts) and the quality blocks (quality_blocks) are
// rewritten thousands of times a second, and a trigger on each write would cost the entry
// path: their catch-up reads the transaction that wrote each row version from the row
// itself (writtenAt).

// ChangePosition is a position in the database's history of changes (ChangePosition).
type ChangePosition struct {
	// XID is the oldest transaction still running when the position was read: every
	// transaction with a lower id had ended, so a reader current at the position has seen
	// their changes, and those of transactions at or above it are re-read.
	XID uint64
	// SessionID is the last session id handed out then.
	SessionID int64
	// At is the database's clock then.
	At time.Time
}

// ChangePosition reads the position of now.
func (db *FeedStore) ChangePosition(ctx context.Context) (ChangePosition, error) {
	var p ChangePosition
	err := db.Pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
		(SELECT last_value FROM sessions_id_seq), now()`).Scan(&p.XID, &p.SessionID, &p.At)
	return p, classify(err)
}

// CampaignsChangedAt returns the ids of the campaigns a transaction at or after xid (a
// ChangePosition's) inserted or updated, whatever their status now: what a process whose
// engine was current at that position re-reads.
func (db *FeedStore) CampaignsChangedAt(ctx context.Context, xid uint64) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id FROM campaigns WHERE change_xid >= $1::bigint::text::xid8 ORDER BY id`, xid)
	if err != nil {
		return nil, classify(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, classify(err)
}

// ParticipantsChangedAt hands fn every participant a transaction at or after xid inserted or
// updated, without entries (EntriesAfter reads those), in batches of at most batch rows by
// id, each its own statement; it returns how many.
func (db *FeedStore) ParticipantsChangedAt(ctx context.Context, xid uint64, batch int, fn func(p PanelParticipant) error) (int64, error) {
	m := db.Participants.meter()
	var n int64
	for after := int64(-1 << 63); ; {
		rows, err := db.Pool.Query(ctx, `SELECT `+participantColumns+` FROM participants
			WHERE change_xid >= $1::bigint::text::xid8 AND id > $2 ORDER BY id LIMIT $3`, xid, after, batch)
		if err != nil {
			return n, classify(err)
		}
		got := 0
		for rows.Next() {
			m.row(ctx)
			p, err := scanParticipant(rows)
			if err != nil {
				rows.Close()
				return n, classify(err)
			}
			if err := fn(p); err != nil {
				rows.Close()
				return n, err
			}
			after = p.ID
			got++
			n++
		}
		if err := rows.Err(); err != nil {
			return n, classify(err)
		}
		if got < batch {
			return n, nil
		}
	}
}

// EntriesAfter hands entry every entry (not a test one) of a session with an id above
// sessionID (a ChangePosition's), historyChunk ids a transaction, and returns how many.
func (db *FeedStore) EntriesAfter(ctx context.Context, sessionID int64, entry func(participantID, campaignID, at int64)) (int64, error) {
	var last int64
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM sessions WHERE id > $1`, sessionID).Scan(&last); err != nil {
		return 0, classify(err)
	}
	m := db.Participants.meter()
	var n int64
	for lo := sessionID; lo < last; lo += historyChunk {
		err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			k, err := readEntries(ctx, tx, `id > $1 AND id <= $2`, &m, entry, lo, min(lo+historyChunk, last))
			n += k
			return err
		})
		if err != nil {
			return n, classify(err)
		}
	}
	return n, nil
}

// writtenAt is a condition on a row of the table aliased r: the transaction that wrote its
// current version has an id at or above $1 (a ChangePosition's XID). A row's xmin is the
// 32-bit id of that transaction; it is widened to 64 bits with the epoch of the next id to
// be handed out (the snapshot's xmax, alias n), the epoch before when it would lie past it.
// A frozen row keeps its xmin and may widen to a recent id: it is then re-read for nothing,
// never missed, since a row written at or after the position was written after it.
const writtenAt = `((n.nx >> 32 << 32) + r.xmin::text::bigint
	- CASE WHEN (n.nx >> 32 << 32) + r.xmin::text::bigint > n.nx THEN 4294967296 ELSE 0 END) >= $1::bigint`

// nextXID is the FROM item n of writtenAt.
const nextXID = `(SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS nx) n`

// CountsChangedAt returns the campaigns whose counts a transaction at or after xid (a
// ChangePosition's) changed: daily, those of which a day's completes or outcomes
// (campaign_daily_counts) changed, whose campaign counts are re-read whole; quotas, those of
// which a quota's counts (campaign_quotas) changed. Both sorted; CountsOf reads them.
func (db *FeedStore) CountsChangedAt(ctx context.Context, xid uint64) (daily, quotas []int64, err error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT r.campaign_id, true FROM campaign_daily_counts r, `+nextXID+` WHERE `+writtenAt+`
		UNION ALL SELECT DISTINCT r.campaign_id, false FROM campaign_quotas r, `+nextXID+` WHERE `+writtenAt+`
		ORDER BY 1`, int64(xid))
	if err != nil {
		return nil, nil, classify(err)
	}
	var id int64
	var isDaily bool
	_, err = pgx.ForEachRow(rows, []any{&id, &isDaily}, func() error {
		if isDaily {
			daily = append(daily, id)
		} else {
			quotas = append(quotas, id)
		}
		return nil
	})
	return daily, quotas, classify(err)
}

// QualityBlocksChangedAt returns the latest block of every participant of which a
// transaction at or after xid (a ChangePosition's) decided or changed (lifted) a block:
// what a blocked set current at that position re-reads.
func (db *QualityStore) QualityBlocksChangedAt(ctx context.Context, xid uint64) ([]QualityBlock, error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT ON (participant_id) `+qualityBlockColumns+` FROM quality_blocks
		WHERE participant_id IN (SELECT r.participant_id FROM quality_blocks r, `+nextXID+` WHERE `+writtenAt+`)
		ORDER BY participant_id, blocked_at DESC, id DESC`, int64(xid))
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QualityBlock, error) { return scanQualityBlock(r) })
	return out, classify(err)
}
