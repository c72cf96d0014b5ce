package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// pgSettings are the bench cluster's settings: room for the server's pools, WAL and
// checkpoints that stay out of the way of 10 s phases, and pg_stat_statements on request.
func pgSettings(o Options) map[string]string {
	s := map[string]string{"max_connections": "200", "shared_buffers": cmp.Or(o.SharedBuffers, "256MB"), "max_wal_size": "4GB",
		"checkpoint_timeout": "30min"}
	if o.WALCompression != "" {
		s["wal_compression"] = o.WALCompression
	}
	if o.Statements {
		s["shared_preload_libraries"] = "pg_stat_statements"
		s["pg_stat_statements.track"] = "all"
		s["pg_stat_statements.track_planning"] = "on"
		s["track_io_timing"] = "on"
	}
	return s
}

// statements reads pg_stat_statements of the bench database (Options.Statements). A nil
// *statements does nothing.
type statements struct {
	conn *pgx.Conn
	// checkpoints is pg_stat_bgwriter's count of checkpoints (timed and requested) at reset:
	// a checkpoint within a phase makes every page's next change log a full-page image.
	checkpoints int64
	// reads is each relation's blocks read into shared buffers (pg_statio_user_tables and
	// _indexes) at reset: which tables and indexes a phase had to fetch.
	reads map[string]int64
}

func openStatements(ctx context.Context, url string) (*statements, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return &statements{conn: conn}, nil
}

func (s *statements) close() {
	if s != nil {
		_ = s.conn.Close(context.Background())
	}
}

// reset starts a phase's statistics.
func (s *statements) reset(ctx context.Context) {
	if s != nil {
		_, _ = s.conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
		s.checkpoints = s.checkpointCount(ctx)
		s.reads = s.blocksRead(ctx)
	}
}

// blocksReadSQL is each table's and index's blocks read into shared buffers so far.
const blocksReadSQL = `SELECT relname, coalesce(heap_blks_read, 0) FROM pg_statio_user_tables
	UNION ALL SELECT indexrelname, coalesce(idx_blks_read, 0) FROM pg_statio_user_indexes`

// blocksRead is blocksReadSQL's answer by relation (nil: unreadable).
func (s *statements) blocksRead(ctx context.Context) map[string]int64 {
	rows, err := s.conn.Query(ctx, blocksReadSQL)
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if rows.Scan(&name, &n) == nil {
			out[name] += n
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return nil
	}
	return out
}

// mostRead names the five relations that read the most blocks since reset, with how many.
func (s *statements) mostRead(ctx context.Context) string {
	now := s.blocksRead(ctx)
	if now == nil || s.reads == nil {
		return "unknown"
	}
	type rel struct {
		name string
		n    int64
	}
	var rs []rel
	for name, n := range now {
		if d := n - s.reads[name]; d > 0 {
			rs = append(rs, rel{name, d})
		}
	}
	slices.SortFunc(rs, func(a, b rel) int { return cmp.Compare(b.n, a.n) })
	var b strings.Builder
	for i, r := range rs[:min(5, len(rs))] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", r.name, r.n)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// checkpointCount is the cluster's checkpoints so far (-1: unreadable).
func (s *statements) checkpointCount(ctx context.Context) int64 {
	var n int64
	if err := s.conn.QueryRow(ctx, "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter").Scan(&n); err != nil {
		return -1
	}
	return n
}

// top describes the ten statements that took the most execution time since reset, per
// request of the phase, with the WAL each call wrote: bytes, and full-page images (a page's
// first change after a checkpoint logs the whole 8 kB page, what inserts at random leaves
// of large indexes pay); and the shared buffers each call found, read in (from the
// operating system: the time it waited for them) and wrote out (a dirty buffer evicted
// to make room is written by the backend that needs the room).
func (s *statements) top(ctx context.Context, requests uint64) []string {
	if s == nil {
		return nil
	}
	checkpoints := "unknown"
	if n := s.checkpointCount(ctx); n >= 0 && s.checkpoints >= 0 {
		checkpoints = strconv.FormatInt(n-s.checkpoints, 10)
	}
	out := []string{"checkpoints during the phase: " + checkpoints, "blocks read into shared buffers: " + s.mostRead(ctx)}
	rows, err := s.conn.Query(ctx, `SELECT calls, total_exec_time, total_plan_time, rows, wal_bytes, wal_fpi,
		shared_blks_hit, shared_blks_read, blk_read_time, shared_blks_written,
		left(regexp_replace(query, '\s+', ' ', 'g'), 100)
		FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 10`)
	if err != nil {
		return append(out, "pg_stat_statements: "+err.Error())
	}
	defer rows.Close()
	for rows.Next() {
		var calls, n, fpi, hit, read, written int64
		var ms, plan, wal, readMS float64
		var q string
		if err := rows.Scan(&calls, &ms, &plan, &n, &wal, &fpi, &hit, &read, &readMS, &written, &q); err != nil {
			return append(out, "pg_stat_statements: "+err.Error())
		}
		perReq := func(ms float64) float64 { return ms * 1000 / float64(max(requests, 1)) }
		perCall := func(x float64) float64 { return x / float64(max(calls, 1)) }
		out = append(out, fmt.Sprintf("%8d calls %9.1f µs/req (planning %7.1f) %7.1f rows/call  WAL %7.0f B/call, %5.2f full pages/call  "+
			"buffers/call %.0f hit, %.1f read (%.1f µs/req waited), %.1f written  %s", calls,
			perReq(ms), perReq(plan), perCall(float64(n)), perCall(wal), perCall(float64(fpi)),
			perCall(float64(hit)), perCall(float64(read)), perReq(readMS), perCall(float64(written)), strings.TrimSpace(q)))
	}
	return out
}
