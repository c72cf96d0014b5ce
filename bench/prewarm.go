package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
)

// Prewarm is what the bench read into memory before the load (none with Options.ColdCache).
type Prewarm struct {
	Relations int
	Bytes     int64 // read in all
	Buffered  int64 // of which into shared buffers
	Took      time.Duration
}

// hotRelationsSQL lists what every entry and callback reads on a serving database: the
// indexes of the sessions partitions that hold sessions of the campaigns in field (those
// from the floor of the oldest one up, as the entries' checks compute it with
// persistence.SessionFloorSQL), and respondents with its indexes. The months of closed campaigns below are not
// in it: a serving database reads them only for exports and insights.
var hotRelationsSQL = `WITH floor AS (
	SELECT ` + persistence.SessionFloorSQL("(SELECT min(created_at) FROM campaigns WHERE status = $1)") + ` AS id
)
SELECT name, size FROM (
	SELECT c.oid::regclass::text AS name, pg_relation_size(c.oid) AS size, 0 AS rank, 0::bigint AS id_from FROM pg_class c
		WHERE c.oid = 'respondents'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'respondents'::regclass)
	UNION ALL
	SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid), 1, p.id_from
		FROM session_partitions p CROSS JOIN floor JOIN pg_index i ON i.indrelid = to_regclass(p.name)
		WHERE p.id_to > floor.id
) h ORDER BY rank, id_from DESC, name`

// prewarm reads the relations a serving database keeps in memory into shared buffers (as
// many as fit in three quarters of them: respondents first, then the latest partitions'
// indexes) and the rest into the operating system's cache, with PostgreSQL's pg_prewarm. A
// database that has served for a year has them there; one just seeded with a year of
// sessions (more than this machine's memory) has the seed's last writes instead, and its
// first minutes of entries wait on the disk for index pages (2.2 blocks read per admitted
// entry in the first year run with tids leading with their block). Only with a year of
// sessions: a smaller database is in memory after its seed.
func prewarm(ctx context.Context, url string) (Prewarm, error) {
	start := time.Now()
	var pw Prewarm
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return pw, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm"); err != nil {
		return pw, fmt.Errorf("pg_prewarm: %w", err)
	}
	rows, err := conn.Query(ctx, hotRelationsSQL, persistence.StatusActive)
	if err != nil {
		return pw, err
	}
	type rel struct {
		Name string
		Size int64
	}
	rels, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rel])
	if err != nil {
		return pw, err
	}
	var room int64
	if err := conn.QueryRow(ctx, `SELECT setting::bigint * current_setting('block_size')::bigint * 3 / 4 FROM pg_settings WHERE name = 'shared_buffers'`).Scan(&room); err != nil {
		return pw, err
	}
	for _, r := range rels {
		mode := "read" // into the kernel's cache
		if r.Size <= room {
			mode, room = "buffer", room-r.Size
			pw.Buffered += r.Size
		}
		if _, err := conn.Exec(ctx, "SELECT pg_prewarm($1::regclass, $2)", r.Name, mode); err != nil {
			return pw, fmt.Errorf("pg_prewarm %s: %w", r.Name, err)
		}
		pw.Relations++
		pw.Bytes += r.Size
	}
	pw.Took = time.Since(start)
	return pw, nil
}
