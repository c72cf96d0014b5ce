package persistence

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// growingTables are the tables the routing statements read by index while they grow fast:
// the tables an entry or a callback writes a row to. For sessions, partitioned (0036), these
// are its partitions: a partitioned table holds no rows and has no statistics of its own to
// refresh, while the partition being filled is young and fast-growing.
var growingTables = []string{"sessions", "respondents", "participants", "postback_outbox"}

// AnalyzeGrowingTables refreshes the planner statistics of those growingTables that have
// taken more changes since their last analyze than the rows they held then (and at least
// 1,000): a table that has about doubled. It returns the tables it analyzed.
//
// Autovacuum analyzes a table after 10% of changes, but it looks only once a minute, and a
// young table doubles much faster than that under load. The hot statements run generic
// plans, made once from the statistics of the moment and kept until the next analyze; made
// from a nearly empty sessions table they read every session of a campaign, or of a
// participant, per entry. Analyzing a table whenever it doubles costs a few analyzes in its
// youth and nothing after. Processes sharing the database take turns (an advisory lock). A
// role that does not own the tables analyzes nothing: PostgreSQL skips them with a warning.
func (db *DB) AnalyzeGrowingTables(ctx context.Context) ([]string, error) {
	var done []string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var mine bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('switchboard.analyze_growing_tables'))`).Scan(&mine); err != nil || !mine {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
			WHERE s.schemaname = current_schema()
			AND (s.relname = ANY($1) OR s.relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass('sessions')))
			AND s.n_mod_since_analyze >= GREATEST(1000, c.reltuples)
			ORDER BY s.relname`, growingTables)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		parent := false // sessions analyzed, with all its partitions
		for _, t := range due {
			stmt := "ANALYZE " + pgx.Identifier{t}.Sanitize()
			if strings.HasPrefix(t, "sessions_p") {
				// The partitioned parent's own statistics estimate every join on sessions
				// (an UPDATE ... FROM unnest(ids) of a callback batch); autovacuum never
				// analyzes a partitioned table. Without them a callback's plan was costed
				// at 1.4M, past jit_above_cost: a second of JIT compilation per batch.
				if parent {
					done = append(done, t)
					continue
				}
				stmt, parent = "ANALYZE sessions", true
			}
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
			done = append(done, t)
		}
		return nil
	})
	if err != nil {
		return nil, classify(err)
	}
	return done, nil
}
