package persistence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// sweepFixture is a buyer's campaigns with sessions written as an admission writes them,
// for the sweeper's release.
type sweepFixture struct {
	t     *testing.T
	ctx   context.Context
	db    *persistence.DB
	buyer int64
}

func newSweepFixture(t *testing.T, email string) *sweepFixture {
	db := migratedDB(t)
	return &sweepFixture{t: t, ctx: context.Background(), db: db, buyer: newBuyer(t, db, email)}
}

func (f *sweepFixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Pool.Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatal(err)
	}
}

// store writes a session of c entered ago, held (in progress) or decided, counted on q as
// an admission counts it, and returns its id.
func (f *sweepFixture) store(tid string, c, q int64, ago time.Duration, held bool) int64 {
	f.t.Helper()
	outcome := any(nil)
	if !held {
		outcome = "complete"
	}
	var id int64
	if err := f.db.Pool.QueryRow(f.ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, quota_ids, entered_at, outcome)
		VALUES ($1, $2, $3, NULL, ARRAY[$4::bigint], now() - $5::interval, $6) RETURNING id`, tid, c, f.buyer, q, ago, outcome).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	if held {
		f.exec(`UPDATE campaign_quotas SET in_progress = in_progress + 1, entries = entries + 1 WHERE id = $1`, q)
	}
	return id
}

// released lists the tids of the released sessions.
func (f *sweepFixture) released() []string {
	f.t.Helper()
	rows, err := f.db.Pool.Query(f.ctx, `SELECT tid FROM sessions WHERE released_at IS NOT NULL ORDER BY tid`)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// inProgress is quota q's in_progress.
func (f *sweepFixture) inProgress(q int64) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(f.ctx, `SELECT in_progress FROM campaign_quotas WHERE id = $1`, q).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// mark is campaign c's sweep mark (0: none).
func (f *sweepFixture) mark(c int64) int64 {
	f.t.Helper()
	var m int64
	if err := f.db.Pool.QueryRow(f.ctx, `SELECT COALESCE((SELECT next_id FROM session_sweep_marks WHERE campaign_id = $1), 0)`, c).Scan(&m); err != nil {
		f.t.Fatal(err)
	}
	return m
}

// sweep releases with limit and checks the campaigns moved and whether more is left.
func (f *sweepFixture) sweep(step string, limit int, wantMoved []int64, wantMore bool) {
	f.t.Helper()
	moved, more, err := f.db.Maintenance.ReleaseStaleSessions(f.ctx, limit)
	if err != nil {
		f.t.Fatal(err)
	}
	if !slices.Equal(moved, wantMoved) || more != wantMore {
		f.t.Errorf("%s: moved %v more %v, want %v %v", step, moved, more, wantMoved, wantMore)
	}
}

// TestReleaseStaleSessionsByMark: the sweeper reads each campaign holding places from where
// its last sweep stopped, in id order: it releases the held sessions whose window (2 × LOI
// + 10 minutes) has passed, skips those decided, stops at the first whose window has not
// (a later id waits for it), goes on where a read stopped at the limit, and never reads a
// campaign that holds no place. (The sessions' entry times are written, not lived: the
// clock's only readings are the releases' own, which bound the reads at the sequence's
// next id.)
func TestReleaseStaleSessionsByMark(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t, "sweep-marks@example.test")
	ctx, db := f.ctx, f.db
	camp, quota := newActiveCampaign(t, db, f.buyer, "LOI 10", nil) // window 30 minutes
	idle, idleQuota := newActiveCampaign(t, db, f.buyer, "holds nothing", nil)
	f.store("a", camp, quota, 40*time.Minute, true)
	f.store("b", camp, quota, 40*time.Minute, false)
	f.store("c", camp, quota, 35*time.Minute, true)
	f.store("d", camp, quota, 5*time.Minute, true)
	f.store("e", camp, quota, 40*time.Minute, true) // a later id entered earlier: waits for d
	last := f.store("f", idle, idleQuota, 40*time.Minute, false)
	f.exec(`UPDATE campaign_quotas SET in_progress = 0 WHERE id = $1`, idleQuota)

	f.sweep("a read of two", 2, []int64{camp}, true) // a released, b decided
	if got := f.released(); !slices.Equal(got, []string{"a"}) || f.inProgress(quota) != 3 {
		t.Errorf("after a read of two: released %v, in_progress %d; want [a] 3", got, f.inProgress(quota))
	}
	f.sweep("the rest", 100, []int64{camp}, false) // c released, stops at d
	if got := f.released(); !slices.Equal(got, []string{"a", "c"}) || f.inProgress(quota) != 2 {
		t.Errorf("after the rest: released %v, in_progress %d; want [a c] 2", got, f.inProgress(quota))
	}
	f.sweep("d still young", 100, nil, false)
	f.exec(`UPDATE sessions SET entered_at = now() - interval '31 minutes' WHERE tid = 'd'`)
	f.sweep("d's window passed", 100, []int64{camp}, false)
	if got := f.released(); !slices.Equal(got, []string{"a", "c", "d", "e"}) || f.inProgress(quota) != 0 {
		t.Errorf("at last: released %v, in_progress %d; want [a c d e] 0", got, f.inProgress(quota))
	}
	if m := f.mark(camp); m != last+1 {
		t.Errorf("mark %d, want %d: past every session read, at the bound (the sequence's next id)", m, last+1)
	}
	if m := f.mark(idle); m != 0 {
		t.Errorf("the campaign holding no place was read (mark %d)", m)
	}
	// A callback after the release is still recorded, and takes no place it no longer holds.
	s, err := db.Sessions.SessionByTID(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Sessions.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: "complete", At: time.Now()})
	if err != nil || !res.Decided || res.Held {
		t.Errorf("a late callback: %+v %v, want decided, not held", res, err)
	}
	if n := f.inProgress(quota); n != 0 {
		t.Errorf("in_progress %d after the late callback, want 0", n)
	}
}

// TestReleaseStopsAtTheClock: each release records where the id sequence stands, and a
// campaign's read stops below the next id of the earliest reading within its window (not
// at an older one): a session above it, drawn after that reading, waits for a later
// reading's bound even when its own window has passed, and a read that covers the whole
// range, with no session inside its window, moves the mark up to the bound. Readings a day
// old are forgotten.
func TestReleaseStopsAtTheClock(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t, "sweep-clock@example.test")
	camp, quota := newActiveCampaign(t, f.db, f.buyer, "LOI 10", nil) // window 30 minutes
	other, otherQuota := newActiveCampaign(t, f.db, f.buyer, "another", nil)
	reading := func(ago time.Duration, next int64) {
		t.Helper()
		f.exec(`INSERT INTO session_clock (at, next_id) VALUES (now() - $1::interval, $2)`, ago, next)
	}
	f.store("a", camp, quota, 40*time.Minute, true)
	c := f.store("c", camp, quota, 35*time.Minute, true)
	f.store("x", other, otherQuota, 40*time.Minute, false) // between c and the bound
	e := f.store("e", camp, quota, 40*time.Minute, true)   // drawn after the bound's reading
	reading(25*time.Hour, 1)                               // forgotten at the first release
	reading(31*time.Minute, 1)                             // older than the window: no bound
	reading(29*time.Minute, e)                             // the earliest within the window

	f.sweep("bounded by the reading 29 minutes old", 100, []int64{camp}, false)
	if got := f.released(); !slices.Equal(got, []string{"a", "c"}) || f.inProgress(quota) != 1 {
		t.Errorf("bounded: released %v, in_progress %d; want [a c] 1", got, f.inProgress(quota))
	}
	if m := f.mark(camp); m != e || m == c+1 {
		t.Errorf("mark %d after a read of the whole range, want the bound %d (not past c only, %d)", m, e, c+1)
	}
	var kept, top int64
	if err := f.db.Pool.QueryRow(f.ctx, `SELECT count(*) FILTER (WHERE at < now() - interval '1 day'),
		(SELECT next_id FROM session_clock ORDER BY at DESC LIMIT 1) FROM session_clock`).Scan(&kept, &top); err != nil {
		t.Fatal(err)
	}
	if kept != 0 || top != e+1 {
		t.Errorf("clock: %d readings a day old kept, latest next id %d; want 0 and %d (the sequence's next)", kept, top, e+1)
	}

	f.exec(`UPDATE session_clock SET at = at - interval '2 minutes'`) // two minutes later
	young := f.store("y", camp, quota, 0, true)
	f.sweep("two minutes later", 100, []int64{camp}, false)
	if got := f.released(); !slices.Equal(got, []string{"a", "c", "e"}) || f.inProgress(quota) != 1 {
		t.Errorf("at last: released %v, in_progress %d; want [a c e] 1 (y young)", got, f.inProgress(quota))
	}
	if m := f.mark(camp); m != young {
		t.Errorf("mark %d, want %d: the bound, below the young session", m, young)
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
		dropped, err := db.Maintenance.RetireSessionIndexes(ctx)
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
	a, err := db.Sessions.Admit(ctx, persistence.Entry{TID: randomTID(), CampaignID: camp, PublisherID: pub, ParticipantID: p.ID,
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
	s, err := db.Sessions.SessionByTID(ctx, a.TID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := db.Sessions.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: "complete", At: time.Now()}); err != nil || !res.Decided {
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
	moved, _, err := db.Maintenance.ReleaseStaleSessions(ctx, 5000)
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
