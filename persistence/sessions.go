package persistence

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// StartTestSession stores a test session (redirect_test) of campaign campaignID with
// transaction id tid: on any campaign status, with no partner or participant, never counted
// toward quotas, caps or billing.
func (db *SessionStore) StartTestSession(ctx context.Context, tid string, campaignID int64) (time.Time, error) {
	var at time.Time
	err := db.Pool.QueryRow(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, is_test, respondent_id)
		SELECT $1, id, buyer_id, true, 'TEST' || substr($1, 1, 12) FROM campaigns WHERE id = $2
		RETURNING entered_at`, tid, campaignID).Scan(&at)
	return at, classify(err)
}

// Session is a stored transaction as callbacks, rejections and reconciliation see it.
type Session struct {
	ID             int64
	TID            string
	CampaignID     int64
	BuyerID        int64
	PublisherID    int64
	ParticipantID  int64
	UserIdentifier string // the partner's identifier of the participant
	QuotaIDs       []int64
	IsTest         bool
	EnteredAt      time.Time
	Outcome        string // "" while none arrived
	OutcomeAt      time.Time
	Released       bool // the sweeper took it out of in_progress
	Rejected       bool
	PayoutUSD      int64 // ten-thousandths of a dollar
	Reward         int64
	CPICents       int64
	LOI            int
	CampaignStatus int // the campaign's status when the session was read
	// ChainID is the re-routing chain the session belongs to (docs/rules.md §10), 0 when
	// none; ChainHop is its place in the chain, 1 for the offer entry.
	ChainID  int64
	ChainHop int
}

// Closed reports whether the session's campaign takes no more outcomes: once reconciled
// (6) its accepted completes are final (docs/rules.md §8), and archived (4) campaigns are done.
func (s Session) Closed() bool {
	return s.CampaignStatus == StatusReconciled || s.CampaignStatus == StatusArchived
}

const sessionColumns = sessionHead + `COALESCE((SELECT p.user_identifier FROM participants p WHERE p.id = s.participant_id), ''),` + sessionTail

// readerSessionColumns are sessionColumns without the participant's user identifier
// (left ""): SessionReader's callers know most participants from their panel, and the
// lookup of the participant's row was a tenth of a callback's PostgreSQL time at 1M
// participants, its heap rarely in shared buffers (docs/performance.md, "The callbacks'
// participant").
const readerSessionColumns = sessionHead + `'',` + sessionTail

const (
	sessionHead = `s.id, s.tid, s.campaign_id, s.buyer_id, COALESCE(s.publisher_id, 0), COALESCE(s.participant_id, 0), `
	sessionTail = `
	s.quota_ids, s.is_test, s.entered_at, COALESCE(s.outcome, ''), COALESCE(s.outcome_at, 'epoch'::timestamptz),
	s.released_at IS NOT NULL, s.rejected, COALESCE((s.payout_usd * 10000)::bigint, 0), COALESCE(s.reward, 0),
	c.cpi_cents, c.length_of_interview, c.status, COALESCE(s.chain_id, 0), COALESCE(s.chain_hop, 0)`
)

// The participant is a scalar subquery rather than a join so that every plan (generic ones
// for arrays of tids included) looks it up by key instead of hashing the whole table.
const sessionFrom = ` FROM sessions s JOIN campaigns c ON c.id = s.campaign_id`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	var cpi int32
	var status, hop int16
	err := row.Scan(&s.ID, &s.TID, &s.CampaignID, &s.BuyerID, &s.PublisherID, &s.ParticipantID, &s.UserIdentifier,
		&s.QuotaIDs, &s.IsTest, &s.EnteredAt, &s.Outcome, &s.OutcomeAt, &s.Released, &s.Rejected, &s.PayoutUSD, &s.Reward,
		&cpi, &s.LOI, &status, &s.ChainID, &hop)
	s.CPICents, s.CampaignStatus, s.ChainHop = int64(cpi), int(status), int(hop)
	return s, err
}

// Lookups by tid: within the id block the tid names (tid.go), which PostgreSQL prunes to the
// partitions holding it, and over every partition for a tid not found there.
const (
	sessionInBlockSQL  = `SELECT ` + sessionColumns + sessionFrom + ` WHERE s.tid = $1 AND s.id >= $2 AND s.id < $3`
	sessionAnywhereSQL = `SELECT ` + sessionColumns + sessionFrom + ` WHERE s.tid = $1`
	readerAnywhereSQL  = `SELECT ` + readerSessionColumns + sessionFrom + ` WHERE s.tid = ANY($1)`
)

// SessionByTID loads a session; an unknown tid is fault.NotFound.
func (db *SessionStore) SessionByTID(ctx context.Context, tid string) (Session, error) {
	if lo, hi, ok := tidBlock(tid); ok {
		s, err := scanSession(db.Pool.QueryRow(ctx, sessionInBlockSQL, tid, lo, hi))
		if !errors.Is(err, pgx.ErrNoRows) {
			return s, classify(err)
		}
	}
	s, err := scanSession(db.Pool.QueryRow(ctx, sessionAnywhereSQL, tid))
	return s, classify(err)
}

// SessionReader looks sessions up by transaction id for callbacks, coalescing concurrent
// lookups into one query (one round trip and one statement for a whole batch instead of one
// each): at thousands of callbacks a second, the per-statement cost is what PostgreSQL
// spends most on.
type SessionReader struct {
	db *SessionStore
	gc groupCommit[*readJob]
}

type readJob struct {
	tid  string
	s    Session
	err  error
	done jobDone
}

// readJobs keeps lookup jobs for the next callbacks.
var readJobs = sync.Pool{New: func() any { return &readJob{done: newJobDone()} }}

// release gives j back to readJobs, holding nothing of its session.
func (j *readJob) release() {
	j.tid, j.s, j.err = "", Session{}, nil
	readJobs.Put(j)
}

// NewSessionReader starts the reader's workers (lookups in flight at once); Close stops them.
func (db *SessionStore) NewSessionReader(workers int) *SessionReader {
	r := &SessionReader{db: db}
	r.gc.start(EntryWriterConfig{Workers: workers, MaxBatch: 256}, r.run)
	return r
}

// Close stops the workers once the queued lookups are answered.
func (r *SessionReader) Close() { r.gc.close() }

// ByTID is SessionByTID through the coalescing reader, but for the participant's user
// identifier, which it leaves "": the caller takes it from its panel or ParticipantUser.
func (r *SessionReader) ByTID(ctx context.Context, tid string) (Session, error) {
	j := readJobs.Get().(*readJob)
	j.tid = tid
	if err := r.gc.offer(0, j, ctx.Done(), ctx.Err); err != nil {
		j.release()
		return Session{}, err
	}
	j.done.wait()
	s, err := j.s, j.err
	j.release()
	return s, err
}

// batchSender is a pool or one connection.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func (r *SessionReader) run(batch []*readJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	found := make(map[string]Session, len(batch))
	collect := func(rows pgx.Rows) error {
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				return err
			}
			found[s.TID] = s
		}
		return rows.Err()
	}
	// First each tid in the partitions that hold its block (usually one: the latest's), in
	// one round trip; then whatever was not found there, over every partition.
	lookups := map[string][]string{}
	var rest, sqls []string
	for _, j := range batch {
		lo, hi, ok := tidBlock(j.tid)
		if ok {
			sqls, ok = r.db.parts.overlapping(ctx, r.db.Pool, lo, hi, sqls[:0])
		}
		if !ok {
			rest = append(rest, j.tid)
			continue
		}
		for _, sql := range sqls {
			lookups[sql] = append(lookups[sql], j.tid)
		}
	}
	var err error
	if len(lookups) > 0 {
		err = sendPartLookups(ctx, r.db.Pool, lookups, collect)
	}
	if err == nil {
		for _, j := range batch {
			if _, ok := found[j.tid]; !ok && len(j.tid) == tidLen {
				rest = append(rest, j.tid)
			}
		}
		if len(rest) > 0 {
			var rows pgx.Rows
			if rows, err = r.db.Pool.Query(ctx, readerAnywhereSQL, rest); err == nil {
				err = collect(rows)
				rows.Close()
			}
		}
	}
	for _, j := range batch {
		if s, ok := found[j.tid]; ok {
			j.s = s
		} else if err != nil {
			j.err = classify(err)
		} else {
			j.err = fault.NotFound("transaction not found")
		}
		j.done.signal()
	}
}
