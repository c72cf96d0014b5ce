package persistence

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The callbacks' coalesced lookups by tid read, by name, the partitions of sessions that
// hold the tids' id block. Through the partitioned table each lookup had to be planned for
// its call with the block's id range (a generic plan of that range read the whole block by
// the primary key once a young partition's plan was kept), and PostgreSQL spent longer
// planning it than running it: 99 µs of planning against 73 µs of execution per callback
// at 100k campaigns. Named, a partition's lookup has no range to prune and one index that
// answers it, the partition's unique tid index, so one plan per connection and partition
// serves every call: made with sequential scans off and with no join that could want the
// partition's rows in another index's order (partLookupSQL), it probes the tid index even
// when it was made while the partition was empty (a plan made for one session read 20,000
// whole by another index, TestSessionLookupByTID). The plan is made again when the
// partition is analyzed.

// sessionPart is one partition of sessions: its ids [from, to), its lookup statement and,
// once the partition is large enough to be planned by name (namedOutcomesRows), the
// callbacks' outcome statement on it.
type sessionPart struct {
	from, to int64
	sql      string
	outcomes string // "": record outcomes through the partitioned table
}

// sessionParts is the partitions of sessions as session_partitions last listed them.
// Partitions are only ever added, above the id sequence, so a list read earlier is right
// for every id below its end; a lookup of ids past it reads the list again, at most once
// every partsReadEvery.
type sessionParts struct {
	mu   sync.Mutex
	read time.Time
	list []sessionPart // id order
}

// partsReadEvery bounds how often lookups of ids past the known partitions read the list
// again (a tid naming a block no partition holds is then looked for in every partition).
const partsReadEvery = time.Second

// The callbacks' outcome statement (recordOutcomesSQL) updates sessions by id. Through the
// partitioned table, a generic plan sets up a probe of every partition each time it runs,
// pruned only then: with a year of partitions that is most of what a small batch costs
// (about 95 µs of a callback batch's PostgreSQL time against 13 partitions). Named, the
// partition holding the batch is all the plan touches. But a plan made while the partition
// looked empty to the planner reads it whole through an index that has the id second (every
// path looks free on an empty table), and keeps doing so until the partition is analyzed; so
// a partition is named only once its statistics count namedOutcomesRows sessions, when the
// only sensible plan is a probe of its primary key per session (TestSessionLookupByTID reads
// it). Until then the list is read again at most every partsNameEvery to learn the count.
const (
	namedOutcomesRows = 10_000
	partsNameEvery    = 15 * time.Second
)

// partLookupSQL looks tids up in one partition of sessions, for SessionReader (without
// the participant's user identifier). The campaign is read in a
// lateral subquery kept apart (OFFSET 0) rather than joined: no join could use the
// partition's rows in an index's order, so that, sequential scans off, the tid index is the
// only way into the partition a plan can take.
func partLookupSQL(partition string) string {
	return `SELECT ` + readerSessionColumns + ` FROM ` + pgx.Identifier{partition}.Sanitize() + ` s,
		LATERAL (SELECT c.cpi_cents, c.length_of_interview, c.status FROM campaigns c WHERE c.id = s.campaign_id OFFSET 0) c
		WHERE s.tid = ANY($1)`
}

// overlapping appends to out the lookups of the partitions that hold ids of [lo, hi),
// reading the list again when it ends below hi; ok is false when no list could be read.
func (ps *sessionParts) overlapping(ctx context.Context, q querier, lo, hi int64, out []string) (_ []string, ok bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if n := len(ps.list); n == 0 || ps.list[n-1].to < hi {
		ps.reread(ctx, q, partsReadEvery)
	}
	i, _ := ps.find(lo)
	for ; i < len(ps.list) && ps.list[i].from < hi; i++ {
		out = append(out, ps.list[i].sql)
	}
	return out, len(ps.list) > 0
}

// outcomesOn returns the outcome statement for a batch of session ids in [lo, hi): the one
// naming their partition when a single partition large enough to be named holds them all,
// else the one through the partitioned table.
func (ps *sessionParts) outcomesOn(ctx context.Context, q querier, lo, hi int64) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	part := ps.holding(lo, hi)
	if (part == nil || part.outcomes == "") && ps.reread(ctx, q, partsNameEvery) {
		part = ps.holding(lo, hi)
	}
	if part == nil || part.outcomes == "" {
		return recordOutcomesSQL
	}
	return part.outcomes
}

// reread reads the list again unless it was read less than every ago, and reports whether
// it did (a failed read keeps the list it had). ps.mu is held.
func (ps *sessionParts) reread(ctx context.Context, q querier, every time.Duration) bool {
	if time.Since(ps.read) < every {
		return false
	}
	ps.read = time.Now()
	list, err := readSessionParts(ctx, q)
	if err != nil {
		return false
	}
	ps.list = list
	return true
}

// find is the index of the partition listed that holds id (found), else of the first above it.
func (ps *sessionParts) find(id int64) (i int, found bool) {
	return slices.BinarySearchFunc(ps.list, id, func(p sessionPart, id int64) int {
		switch {
		case p.to <= id:
			return -1
		case p.from > id:
			return 1
		}
		return 0
	})
}

// holding is the partition listed that holds every id of [lo, hi), or nil.
func (ps *sessionParts) holding(lo, hi int64) *sessionPart {
	i, found := ps.find(lo)
	if !found || ps.list[i].to < hi {
		return nil
	}
	return &ps.list[i]
}

// readSessionParts lists the partitions of sessions in id order.
func readSessionParts(ctx context.Context, q querier) ([]sessionPart, error) {
	rows, err := q.Query(ctx, `SELECT p.name, p.id_from, p.id_to, c.reltuples FROM session_partitions p
		JOIN pg_class c ON c.oid = to_regclass(p.name) ORDER BY p.id_from`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (sessionPart, error) {
		var p sessionPart
		var name string
		var tuples float32 // the planner's count of the partition's rows
		err := row.Scan(&name, &p.from, &p.to, &tuples)
		p.sql = partLookupSQL(name)
		if tuples >= namedOutcomesRows {
			p.outcomes = recordOutcomesOn(pgx.Identifier{name}.Sanitize())
		}
		return p, err
	})
}

// sendPartLookups runs the lookups (a partLookupSQL statement → the tids to look for with
// it) in one round trip, on their connection's plans (see above).
func sendPartLookups(ctx context.Context, db batchSender, lookups map[string][]string, collect func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN READ ONLY")
	b.Queue(`SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`)
	for sql, tids := range lookups {
		b.Queue(sql, tids).Query(collect)
	}
	b.Queue("COMMIT")
	return db.SendBatch(ctx, b).Close()
}
