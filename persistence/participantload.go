package persistence

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// loadStreamPages is the table size (8 KiB pages) below which the start-up load reads
// participants in one stream: about 100,000 participants of a typical profile.
var loadStreamPages int64 = 2048

// beforeStream, when set (by tests), runs in stream i of n before its query.
var beforeStream func(i, n int)

// loadStreams is how many streams read a large participants table: one per core, at least
// two (PostgreSQL's side of a stream, reading and printing the rows, takes about as long as
// ours, decoding and storing them), at most four (connections the rest of the start-up needs).
func loadStreams() int { return min(4, max(2, runtime.NumCPU())) }

// streamParticipants reads every participant active since `since` and hands each to fn
// (which must be safe for concurrent use) from one stream per page range, see
// LoadActiveParticipants.
func (db *DB) streamParticipants(ctx context.Context, since time.Time, fn func(p PanelParticipant) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lead, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return classify(err)
	}
	defer lead.Rollback(context.WithoutCancel(ctx))
	var snapshot string
	var pages int64
	// The snapshot is taken by the first statement; the size read after it covers every row
	// the snapshot sees.
	err = lead.QueryRow(ctx, `SELECT pg_export_snapshot(),
		pg_relation_size('participants') / current_setting('block_size')::bigint`).Scan(&snapshot, &pages)
	if err != nil {
		return classify(err)
	}
	streams := loadStreams()
	if n := int(db.loadStreams.Load()); n > 0 {
		streams = min(streams, n)
	}
	if pages < loadStreamPages {
		streams = 1
	}
	if strings.Trim(snapshot, "0123456789ABCDEFabcdef-") != "" {
		return fmt.Errorf("participant load: unexpected snapshot id %q", snapshot)
	}
	txs := []pgx.Tx{lead}
	for range streams - 1 {
		tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err == nil {
			if _, err = tx.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`); err != nil {
				tx.Rollback(context.WithoutCancel(ctx))
			}
		}
		if err != nil {
			break // fewer streams: the pool is short of connections
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		txs = append(txs, tx)
	}
	errs := make([]error, len(txs))
	var wg sync.WaitGroup
	for i, tx := range txs {
		// Stream i reads pages [lo, hi); the last one has no upper bound.
		lo, hi := pages*int64(i)/int64(len(txs)), pages*int64(i+1)/int64(len(txs))
		wg.Go(func() {
			if beforeStream != nil {
				beforeStream(i, len(txs))
			}
			m := db.meter()
			errs[i] = readParticipants(ctx, tx, since, lo, hi, i == len(txs)-1, &m, fn)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// The error that stopped the load, rather than the cancellations it caused.
	var first error
	for _, err := range errs {
		switch {
		case err == nil:
		case !errors.Is(err, context.Canceled):
			return err
		case first == nil:
			first = err
		}
	}
	return first
}

// readParticipants reads the participants active since `since` in pages [lo, hi) of the
// table (hi unbounded when last) and hands each to fn, paced by m.
func readParticipants(ctx context.Context, tx pgx.Tx, since time.Time, lo, hi int64, last bool, m *loadMeter,
	fn func(p PanelParticipant) error) error {
	q := `SELECT ` + participantColumns + ` FROM participants WHERE last_active_at >= $1 AND ctid >= $2::tid`
	args := []any{since, fmt.Sprintf("(%d,0)", lo)}
	if !last {
		q += ` AND ctid < $3::tid`
		args = append(args, fmt.Sprintf("(%d,0)", hi))
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	var sc profileScratch
	var formats []int16
	for rows.Next() {
		m.row(ctx)
		if formats == nil {
			for _, fd := range rows.FieldDescriptions() {
				formats = append(formats, fd.Format)
			}
		}
		p, ok := sc.decodeRow(formats, rows.RawValues())
		if !ok { // a profile the fast parser declines, or unexpected formats
			if p, err = scanParticipant(rows); err != nil {
				return err
			}
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return classify(rows.Err())
}
