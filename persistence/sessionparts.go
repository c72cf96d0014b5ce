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

// sessionPart is one partition of sessions: its ids [from, to) and its lookup statement.
type sessionPart struct {
	from, to int64
	sql      string
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

// partLookupSQL looks tids up in one partition of sessions. The campaign is read in a
// lateral subquery kept apart (OFFSET 0) rather than joined: no join could use the
// partition's rows in an index's order, so that, sequential scans off, the tid index is the
// only way into the partition a plan can take.
func partLookupSQL(partition string) string {
	return `SELECT ` + sessionColumns + ` FROM ` + pgx.Identifier{partition}.Sanitize() + ` s,
		LATERAL (SELECT c.cpi_cents, c.length_of_interview, c.status FROM campaigns c WHERE c.id = s.campaign_id OFFSET 0) c
		WHERE s.tid = ANY($1)`
}

// overlapping appends to out the lookups of the partitions that hold ids of [lo, hi),
// reading the list again when it ends below hi; ok is false when no list could be read.
func (ps *sessionParts) overlapping(ctx context.Context, q querier, lo, hi int64, out []string) (_ []string, ok bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if n := len(ps.list); (n == 0 || ps.list[n-1].to < hi) && time.Since(ps.read) >= partsReadEvery {
		ps.read = time.Now()
		if list, err := readSessionParts(ctx, q); err == nil {
			ps.list = list
		}
	}
	i, _ := slices.BinarySearchFunc(ps.list, lo, func(p sessionPart, id int64) int {
		switch {
		case p.to <= id:
			return -1
		case p.from > id:
			return 1
		}
		return 0
	})
	for ; i < len(ps.list) && ps.list[i].from < hi; i++ {
		out = append(out, ps.list[i].sql)
	}
	return out, len(ps.list) > 0
}

// readSessionParts lists the partitions of sessions in id order.
func readSessionParts(ctx context.Context, q querier) ([]sessionPart, error) {
	rows, err := q.Query(ctx, `SELECT name, id_from, id_to FROM session_partitions
		WHERE to_regclass(name) IS NOT NULL ORDER BY id_from`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (sessionPart, error) {
		var p sessionPart
		var name string
		err := row.Scan(&name, &p.from, &p.to)
		p.sql = partLookupSQL(name)
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
