package persistence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestReleaseStaleSessionsByMark: the sweeper reads each campaign holding places from where
// its last sweep stopped, in id order: it releases the held sessions whose window (2 × LOI
// + 10 minutes) has passed, skips those decided, stops at the first whose window has not
// (a later id waits for it), goes on where a read stopped at the limit, and never reads a
// campaign that holds no place.
func TestReleaseStaleSessionsByMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "sweep-marks@example.test")
	camp, quota := newActiveCampaign(t, db, buyer, "LOI 10", nil) // window 30 minutes
	idle, idleQuota := newActiveCampaign(t, db, buyer, "holds nothing", nil)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// store writes a session of c entered ago, held (in progress) or decided, counted on q as
	// an admission counts it.
	store := func(tid string, c, q int64, ago time.Duration, held bool) {
		t.Helper()
		outcome := any(nil)
		if !held {
			outcome = "complete"
		}
		exec(`INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, quota_ids, entered_at, outcome)
			VALUES ($1, $2, $3, NULL, ARRAY[$4::bigint], now() - $5::interval, $6)`, tid, c, buyer, q, ago, outcome)
		if held {
			exec(`UPDATE campaign_quotas SET in_progress = in_progress + 1, entries = entries + 1 WHERE id = $1`, q)
		}
	}
	store("a", camp, quota, 40*time.Minute, true)
	store("b", camp, quota, 40*time.Minute, false)
	store("c", camp, quota, 35*time.Minute, true)
	store("d", camp, quota, 5*time.Minute, true)
	store("e", camp, quota, 40*time.Minute, true) // a later id entered earlier: waits for d
	store("f", idle, idleQuota, 40*time.Minute, false)
	exec(`UPDATE campaign_quotas SET in_progress = 0 WHERE id = $1`, idleQuota)
	released := func() []string {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `SELECT tid FROM sessions WHERE released_at IS NOT NULL ORDER BY tid`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	inProgress := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT in_progress FROM campaign_quotas WHERE id = $1`, quota).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	sweep := func(step string, limit int, wantMoved []int64, wantMore bool) {
		t.Helper()
		moved, more, err := db.ReleaseStaleSessions(ctx, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(moved, wantMoved) || more != wantMore {
			t.Errorf("%s: moved %v more %v, want %v %v", step, moved, more, wantMoved, wantMore)
		}
	}

	sweep("a read of two", 2, []int64{camp}, true) // a released, b decided
	if got := released(); !slices.Equal(got, []string{"a"}) || inProgress() != 3 {
		t.Errorf("after a read of two: released %v, in_progress %d; want [a] 3", got, inProgress())
	}
	sweep("the rest", 100, []int64{camp}, false) // c released, stops at d
	if got := released(); !slices.Equal(got, []string{"a", "c"}) || inProgress() != 2 {
		t.Errorf("after the rest: released %v, in_progress %d; want [a c] 2", got, inProgress())
	}
	sweep("d still young", 100, nil, false)
	exec(`UPDATE sessions SET entered_at = now() - interval '31 minutes' WHERE tid = 'd'`)
	sweep("d's window passed", 100, []int64{camp}, false)
	if got := released(); !slices.Equal(got, []string{"a", "c", "d", "e"}) || inProgress() != 0 {
		t.Errorf("at last: released %v, in_progress %d; want [a c d e] 0", got, inProgress())
	}
	var mark, top int64
	if err := db.Pool.QueryRow(ctx, `SELECT m.next_id, (SELECT max(id) FROM sessions WHERE campaign_id = $1)
		FROM session_sweep_marks m WHERE m.campaign_id = $1`, camp).Scan(&mark, &top); err != nil || mark != top+1 {
		t.Errorf("mark %d (%v), want %d: past every session read", mark, err, top+1)
	}
	var idleMarks int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM session_sweep_marks WHERE campaign_id = $1`, idle).Scan(&idleMarks); err != nil || idleMarks != 0 {
		t.Errorf("the campaign holding no place was read (%d marks, %v)", idleMarks, err)
	}
	// A callback after the release is still recorded, and takes no place it no longer holds.
	s, err := db.SessionByTID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: "complete", At: time.Now()})
	if err != nil || !res.Decided || res.Held {
		t.Errorf("a late callback: %+v %v, want decided, not held", res, err)
	}
	if n := inProgress(); n != 0 {
		t.Errorf("in_progress %d after the late callback, want 0", n)
	}
}

// TestRetireSessionIndexes: the indexes of sessions that kept callbacks from HOT updates
// stay while a process of an earlier release is alive (a heartbeat without a schema within
// the last minute), and are dropped once none is (a stale one does not count); then a
// callback's update of its session touches no index.
func TestRetireSessionIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	present := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('sessions_waiting', 'sessions_campaign_complete')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := present(); n != 2 {
		t.Fatalf("%d of the two indexes after migrating, want 2", n)
	}
	beat := func(id string, schema any, ago time.Duration) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `INSERT INTO serve_processes (id, addr, version, started_at, campaigns, participants, schema, updated_at)
			VALUES ($1, 'x', 'old', now(), 0, 0, $2, now() - $3::interval)
			ON CONFLICT (id) DO UPDATE SET schema = EXCLUDED.schema, updated_at = EXCLUDED.updated_at`, id, schema, ago); err != nil {
			t.Fatal(err)
		}
	}
	retire := func(step string, want bool, wantLeft int) {
		t.Helper()
		dropped, err := db.RetireSessionIndexes(ctx)
		if err != nil || dropped != want {
			t.Errorf("%s: dropped %v (%v), want %v", step, dropped, err, want)
		}
		if n := present(); n != wantLeft {
			t.Errorf("%s: %d indexes left, want %d", step, n, wantLeft)
		}
	}
	beat("old", nil, 0)
	beat("new", 46, 0)
	retire("an old process alive", false, 2)
	beat("old", 45, 0)
	retire("an old process with a schema", false, 2)
	beat("old", nil, 2*time.Minute)
	retire("the old process's heartbeat stale", true, 0)
	retire("again", false, 0)

	// A callback now rewrites its session's page, not its indexes.
	pub := newPublisher(t, db)
	buyer := newBuyer(t, db, "hot@example.test")
	camp, quota := newActiveCampaign(t, db, buyer, "HOT", nil)
	p := planParticipant(t, db, pub)
	a, err := db.Admit(ctx, persistence.Entry{TID: randomTID(), CampaignID: camp, PublisherID: pub, ParticipantID: p.ID,
		QuotaIDs: []int64{quota}, RespondentID: "R-hot"})
	if err != nil || a.Refused != "" {
		t.Fatalf("admit: %+v %v", a, err)
	}
	var part string
	if err := db.Pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM sessions WHERE tid = $1`, a.TID).Scan(&part); err != nil {
		t.Fatal(err)
	}
	hot := func() (upd, hot int64) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = $1::regclass`, part).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		return upd, hot
	}
	upd0, hot0 := hot()
	s, err := db.SessionByTID(ctx, a.TID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := db.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: "complete", At: time.Now()}); err != nil || !res.Decided {
		t.Fatalf("callback: %+v %v", res, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		upd, h := hot()
		if upd > upd0 {
			if h-hot0 != upd-upd0 {
				t.Errorf("%s: %d updates, %d of them HOT, want all", part, upd-upd0, h-hot0)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no update counted in 10 s", part)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReleaseReadsOnlyItsPartitions: a release finds the sessions it releases by id in the
// partitions that hold them, whatever join the planner would prefer. With nested loops
// made unattractive (as the planner finds them when it expects many sessions to release),
// releasing a few sessions of the latest partition reads no row of the partitions before
// it, however many sessions they hold.
func TestReleaseReadsOnlyItsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One connection, whose table counters it flushes before reading them: every statement
	// runs on it, so that no other backend's counters arrive late.
	db, err := persistence.Open(ctx, oneConnection(pgtest.EmptyURL(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	buyer := newBuyer(t, db, "sweep-partitions@example.test")
	past := newCampaign(t, db, buyer, "a closed campaign of the year before")
	camp, quota := newActiveCampaign(t, db, buyer, "LOI 10", nil)

	// The year before: 200,000 decided sessions, vacuumed and analyzed, left alone by
	// autovacuum while the test reads the counters.
	exec(`INSERT INTO sessions (tid, campaign_id, buyer_id, entered_at, outcome)
		SELECT 'past-' || g, $1, $2, now() - interval '200 days', 'complete' FROM generate_series(1, 200000) g`, past, buyer)
	// Today's partition: 600 held sessions of the active campaign, 500 of them past their
	// window, swept before (its mark stands at the partition's start).
	var today int64
	if err := db.Pool.QueryRow(ctx, `SELECT max(id_to) FROM session_partitions`).Scan(&today); err != nil {
		t.Fatal(err)
	}
	exec(`SELECT switchboard_add_session_partition($1::bigint, $1::bigint + 1000000)`, today)
	exec(`SELECT setval('sessions_id_seq', $1)`, today)
	exec(`INSERT INTO sessions (tid, campaign_id, buyer_id, quota_ids, entered_at)
		SELECT 'today-' || g, $1, $2, ARRAY[$3::bigint], now() - CASE WHEN g <= 500 THEN interval '40 minutes' ELSE interval '1 minute' END
		FROM generate_series(1, 600) g`, camp, buyer, quota)
	exec(`UPDATE campaign_quotas SET in_progress = 600, entries = 600 WHERE id = $1`, quota)
	exec(`INSERT INTO session_sweep_marks (campaign_id, next_id) VALUES ($1, $2)`, camp, today)
	exec(`DO $$ DECLARE p text; BEGIN
		FOR p IN SELECT name FROM session_partitions LOOP
			EXECUTE format('ALTER TABLE %I SET (autovacuum_enabled = false)', p);
		END LOOP; END $$`)
	exec(`VACUUM ANALYZE sessions`)
	exec(`SET enable_nestloop = off`) // on the pool's one connection, for the rest of the test

	// The heap blocks read of every partition but today's.
	earlier := func() int64 {
		t.Helper()
		exec(`SELECT pg_stat_force_next_flush()`)
		var n int64
		if err := db.Pool.QueryRow(ctx, `SELECT COALESCE(sum(t.heap_blks_read + t.heap_blks_hit), 0)::bigint
			FROM pg_statio_user_tables t JOIN session_partitions p ON p.name = t.relname WHERE p.id_from < $1`, today).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := earlier()
	moved, _, err := db.ReleaseStaleSessions(ctx, 5000)
	if err != nil {
		t.Fatal(err)
	}
	read := earlier() - before
	var released, inProgress int64
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions WHERE released_at IS NOT NULL),
		(SELECT in_progress FROM campaign_quotas WHERE id = $1)`, quota).Scan(&released, &inProgress); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(moved, []int64{camp}) || released != 500 || inProgress != 100 {
		t.Fatalf("moved %v, %d released, in_progress %d; want [%d], 500, 100", moved, released, inProgress, camp)
	}
	if read != 0 { // (their indexes' metapages are read when a statement is planned)
		t.Errorf("the release read %d heap blocks of the partitions before today's, want none", read)
	}
}
