package persistence

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// loadStreamPages is the table size (8 KiB pages) below which the start-up load reads
// participants in one stream: about 100,000 participants of a typical profile.
var loadStreamPages int64 = 2048

// loadChunk is how many participant ids one statement of the load reads. Each statement is
// its own snapshot, held only while it runs: a load paced over many seconds (a joining
// process) must not keep the row versions that every other process's entries leave behind
// (quota counters above all) alive for its whole length, which slows those entries.
var loadChunk int64 = 1 << 15

// beforeStream, when set (by tests), runs before the query of chunk i of n.
var beforeStream func(i, n int)

// SetLoadStreams caps how many streams (connections) a participant load reads in; 0 lets
// it take one per core (2 to 4). A process joining others that serve sets 1, so that its
// start-up leaves the database's cores to their requests.
func (db *ParticipantStore) SetLoadStreams(n int) { db.loadStreams.Store(int32(max(n, 0))) }

// loadStreams is how many streams read a large participants table: one per core, at least
// two (PostgreSQL's side of a stream, reading and printing the rows, takes about as long as
// ours, decoding and storing them), at most four (connections the rest of the start-up needs).
func loadStreams() int { return min(4, max(2, runtime.NumCPU())) }

// streamParticipants reads every participant active since `since` and hands each to fn
// (which must be safe for concurrent use) from one stream per connection, see
// LoadActiveParticipants. The streams share the table's id range in chunks of loadChunk ids,
// each read by one statement: a participant's id never changes, so a row an update moves
// during the load is still read once, by the one statement whose range holds its id.
func (db *ParticipantStore) streamParticipants(ctx context.Context, since time.Time, fn func(p PanelParticipant) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lo, hi, pages int64
	err := db.Pool.QueryRow(ctx, `SELECT coalesce(min(id), 0), coalesce(max(id), -1),
		pg_relation_size('participants') / current_setting('block_size')::bigint FROM participants`).Scan(&lo, &hi, &pages)
	if err != nil {
		return classify(err)
	}
	if hi < lo {
		return nil // no participants
	}
	chunks := (hi-lo)/loadChunk + 1
	streams := loadStreams()
	if n := int(db.loadStreams.Load()); n > 0 {
		streams = min(streams, n)
	}
	if pages < loadStreamPages {
		streams = 1
	}
	streams = int(min(int64(streams), chunks))
	var next atomic.Int64
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			errs[i] = db.readChunks(ctx, since, lo, chunks, &next, fn)
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

// readChunks is one stream of streamParticipants: on one connection, it reads the chunks
// next hands out (chunk c covers ids from lo + c·loadChunk) until there are none left.
func (db *ParticipantStore) readChunks(ctx context.Context, since time.Time, lo, chunks int64, next *atomic.Int64,
	fn func(p PanelParticipant) error) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Release()
	m := db.meter()
	var sc profileScratch
	for {
		c := next.Add(1) - 1
		if c >= chunks {
			return nil
		}
		if beforeStream != nil {
			beforeStream(int(c), int(chunks))
		}
		from := lo + c*loadChunk
		if err := readParticipants(ctx, conn, since, from, from+loadChunk, &m, &sc, fn); err != nil {
			return err
		}
	}
}

// readParticipants reads the participants active since `since` with ids in [from, to) and
// hands each to fn, paced by m, decoding rows in sc.
func readParticipants(ctx context.Context, conn *pgxpool.Conn, since time.Time, from, to int64, m *loadMeter,
	sc *profileScratch, fn func(p PanelParticipant) error) error {
	rows, err := conn.Query(ctx, `SELECT `+participantColumns+` FROM participants
		WHERE id >= $1 AND id < $2 AND last_active_at >= $3`, from, to, since)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
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
