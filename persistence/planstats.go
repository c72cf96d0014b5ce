package persistence

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// growingTables are the tables the routing statements read by index while they grow fast:
// the tables an entry or a callback writes a row to (participations through the trigger on
// sessions). Sessions, partitioned (0036), is not
// named: its partitions are found through pg_inherits (the one being filled is young and
// fast-growing) and the partitioned table itself by sessionsParentDueSQL.
var growingTables = []string{"respondents", "participants", "participations", "postback_outbox"}

// sessionsParentDueSQL names the partitioned table sessions when it is due an analyze: it
// has never been analyzed (reltuples −1) and holds at least 1,000 rows, or its partitions'
// rows (their live estimates) have doubled or halved since its last analyze, by 1,000 rows
// at least. The partitioned table's statistics estimate every join on sessions (an UPDATE
// ... FROM unnest(ids) of a callback batch): without them a callback's plan was costed at
// 1.4M, past jit_above_cost, a second of JIT compilation per batch.
const sessionsParentDueSQL = `SELECT 'sessions'::text FROM pg_class c,
	LATERAL (SELECT coalesce(sum(s.n_live_tup), 0) AS live FROM pg_stat_user_tables s
		WHERE s.relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = c.oid)) p
	WHERE c.oid = to_regclass('sessions') AND c.relkind = 'p'
	AND abs(p.live - greatest(c.reltuples, 0)) >= 1000
	AND (c.reltuples < 0 OR p.live >= 2 * c.reltuples OR 2 * p.live <= c.reltuples)`

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
//
// Sessions is partitioned: a partition that doubled is analyzed alone, and the partitioned
// table (whose own statistics autovacuum never gathers) by the same rule over all its rows
// (sessionsParentDueSQL). Analyzing the partitioned table samples every partition again, so it
// followed each young partition's doublings only while the table was young: on ten
// million seeded sessions one such ANALYZE read for 13 s beside the entries it slowed.
func (db *MaintenanceStore) AnalyzeGrowingTables(ctx context.Context) ([]string, error) {
	var done []string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var mine bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('switchboard.analyze_growing_tables'))`).Scan(&mine); err != nil || !mine {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
			WHERE s.schemaname = current_schema()
			AND (s.relname = ANY($1) OR s.relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass('sessions')))
			AND c.relkind <> 'p' AND s.n_mod_since_analyze >= GREATEST(1000, c.reltuples)
			UNION `+sessionsParentDueSQL+`
			ORDER BY 1`, growingTables)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, t := range due {
			if _, err := tx.Exec(ctx, "ANALYZE "+pgx.Identifier{t}.Sanitize()); err != nil {
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
