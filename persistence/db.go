// Package persistence keeps Switchboard's source of truth in PostgreSQL: the schema and its
// numbered migrations, reference data, accounts, campaigns, participants and sessions.
// Every admin write lands here first; the engine is told afterwards.
package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
)

// DB is the handle every handler and background worker shares: the pool, the transactions
// and the migrations. What it keeps is reached through its stores, one per concept
// (stores.go).
type DB struct {
	Pool *pgxpool.Pool
	log  *zap.Logger

	Accounts     *AccountStore
	Operators    *OperatorStore
	Campaigns    *CampaignStore
	Catalog      *CatalogStore
	Participants *ParticipantStore
	Sessions     *SessionStore
	Quality      *QualityStore
	Outbox       *OutboxStore
	Insights     *InsightStore
	Ledger       *LedgerStore
	Feed         *FeedStore
	Maintenance  *MaintenanceStore

	// loadStreams caps the streams of a participant load (0: loadStreams()).
	loadStreams atomic.Int32
	pace        loadPacer // paces bulk loads while the process joins others (loadpace.go)
	// parts lists the partitions of sessions for the statements that name them (the
	// callbacks' lookups and outcomes, sessionparts.go).
	parts sessionParts
}

// jitDefault is PostgreSQL's jit setting on the service's connections unless the database
// URL sets one (`?jit=on`). JIT compilation pays for itself on long analytical queries; the
// service's are short, or walk the market in slices, and PostgreSQL compiled any whose
// estimate crossed jit_above_cost: the sweeper's broken-link check spent 140–200 ms
// compiling for 26–75 ms of work, on every sweep (docs/performance.md, "JIT off").
const jitDefault = "off"

// Open connects a pool to url and checks that the server answers.
func Open(ctx context.Context, url string, log *zap.Logger) (*DB, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = jitDefault
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return NewDB(pool, log), nil
}

// Close releases every connection.
func (db *DB) Close() { db.Pool.Close() }

// Ping reports whether the database answers within ctx.
func (db *DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }

// Tx runs fn in one transaction, committing when fn returns nil. Connection-level failures
// become fault.Unavailable so that a write during an outage answers 503. Within an
// idempotent create (CreateOnce: ctx carries its transaction) fn runs in that transaction,
// under a savepoint, and commits with it.
func (db *DB) Tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if outer, ok := ctx.Value(createTxKey{}).(pgx.Tx); ok {
		return classify(pgx.BeginFunc(ctx, outer, fn))
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rollback after commit is a no-op
	if err := fn(tx); err != nil {
		return classify(err)
	}
	return classify(tx.Commit(ctx))
}

// InOneTx runs fn with a context whose Tx calls join one transaction (each under a
// savepoint), committed when fn returns nil: several writes that each open their own
// transaction (a campaign, its quotas, its screeners) are stored together, or, when fn
// fails, none of them is.
func (db *DB) InOneTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return fn(context.WithValue(ctx, createTxKey{}, tx)) })
}

// classify maps driver errors onto the fault vocabulary; fault errors pass through.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var f *fault.Error
	if errors.As(err, &f) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.NotFound("not found")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57": // connection exception, operator intervention (shutdown)
			return fault.Unavailable(err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fault.Unavailable(err)
	}
	// Dial and I/O failures surface as *pgconn.ConnectError or net errors.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) || isNetErr(err) {
		return fault.Unavailable(err)
	}
	return err
}

// isNetErr reports whether err came from the network rather than from the server's logic.
func isNetErr(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed)
}

// sendTx sends b, a whole transaction (BEGIN … COMMIT) in one round trip, on a connection
// of its own; after a failure it makes sure the connection goes back to the pool with no
// transaction open.
func (db *DB) sendTx(ctx context.Context, b *pgx.Batch) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = conn.SendBatch(ctx, b).Close()
	if err != nil {
		rollbackOpen(ctx, conn.Conn())
	}
	return err
}

// rollbackOpen ends a transaction a failed batch left open, so that the connection never
// goes back to the pool inside one.
func rollbackOpen(ctx context.Context, conn *pgx.Conn) {
	if conn.IsClosed() || conn.PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_, _ = conn.Exec(rctx, "ROLLBACK")
	cancel()
}

// PoolStats are the connection pool's counts, for the process's metrics.
type PoolStats struct {
	Acquired, Idle, Total, Max int32 // connections in use, idle, open; the pool's size limit
	EmptyAcquires              int64 // acquires that had to wait for a connection
}

// PoolStats reads the pool's counts now.
func (db *DB) PoolStats() PoolStats {
	st := db.Pool.Stat()
	return PoolStats{Acquired: st.AcquiredConns(), Idle: st.IdleConns(), Total: st.TotalConns(),
		Max: st.MaxConns(), EmptyAcquires: st.EmptyAcquireCount()}
}
