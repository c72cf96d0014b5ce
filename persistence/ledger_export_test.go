package persistence

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// RecordCompletesTimed records a complete for each of ss (distinct, in id order) in one
// transaction as the callbacks' batch does (recordOutcomes), through the statement with its
// ledger insert into table ledger (ledger_events, or a copy of it) or, ledger "", the same
// statement without it, and returns the time of the round trip: the A/B of the ledger's
// cost on the callbacks' PostgreSQL time.
func (db *DB) RecordCompletesTimed(ctx context.Context, ss []Session, ledger string) (time.Duration, error) {
	sql := recordOutcomesSQL
	switch ledger {
	case "":
		sql = strings.Replace(sql, "), le AS (\n\t"+outcomeLedgerSQL+"\n", "", 1)
	case "ledger_events":
	default:
		sql = strings.Replace(sql, "INSERT INTO ledger_events ", "INSERT INTO "+ledger+" ", 1)
	}
	n := len(ss)
	ids, outcomes, ats, payouts, rewards := make([]int64, n), make([]string, n), make([]time.Time, n), make([]int64, n), make([]int64, n)
	pbTIDs, pbPubs, pbURLs, pbLeases := make([]string, n), make([]int64, n), make([]string, n), make([]int64, n)
	cpis, told := make([]int64, n), make([]bool, n)
	now := time.Now()
	for i, s := range ss {
		ids[i], outcomes[i], ats[i], payouts[i], rewards[i] = s.ID, "complete", now, 5000, 50
		pbTIDs[i], pbPubs[i], pbURLs[i], pbLeases[i] = s.TID, s.PublisherID, "https://partner.example/pb?tid="+s.TID, int64(20*time.Second/time.Microsecond)
		cpis[i], told[i] = s.CPICents, true
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	b.Queue(sql, ids, outcomes, ats, payouts, rewards, pbTIDs, pbPubs, pbURLs, pbLeases, PostbackChannel, cpis, told).Query(func(rows pgx.Rows) error {
		for rows.Next() {
		}
		return rows.Err()
	})
	b.Queue("COMMIT")
	start := time.Now()
	err := db.sendTx(ctx, b)
	return time.Since(start), err
}
