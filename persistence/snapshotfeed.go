package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// A process started from a snapshot catches up from the database: what changed at or after
// the position the snapshot is consistent at. Campaigns and participants record the
// transaction that last changed them (change_xid, set by a trigger on every insert and
// update: migration 0055); entries are sessions, whose ids the position bounds.

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
