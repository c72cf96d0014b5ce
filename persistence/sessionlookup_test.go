package persistence_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
)

// TestSessionLookupByTID: an admitted session's tid names its id's block, and a callback's
// lookup (alone, and coalesced) reads only the partitions of that block; a session whose tid
// names no block or the wrong one (stored before tids carried blocks or before the block led
// them, a test session) is found all the same, and an unknown tid is not found.
func TestSessionLookupByTID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "tids@example.test", "Tids", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, db)
	camp := newCampaign(t, db, buyer.ID, "Tids")
	num := 1000
	q, err := db.Campaigns.CreateQuota(ctx, buyer.ID, camp, persistence.QuotaFields{NumRespondents: &num,
		Qualifications: []persistence.QualificationInput{{QuestionID: 43, PreCodes: []persistence.PreCode{{Text: "1", Number: true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, reentry_interval = 0 WHERE id = $1`, camp); err != nil {
		t.Fatal(err)
	}
	p, err := db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub, User: "tid-user", CountryID: 1,
		Profile: []persistence.ProfileAnswer{{QuestionID: 43, Codes: []int32{1}}}}, "test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Partitions ahead of the sequence, so that a block's neighbours exist to be pruned.
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		t.Fatal(err)
	}
	// explain runs sql (EXPLAIN ANALYZE, so a write is made: run it in a transaction rolled
	// back) and returns its plan.
	explain := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}, sql string, args ...any) string {
		t.Helper()
		rows, err := q.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) `+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	admit := func() string {
		t.Helper()
		a, err := db.Sessions.Admit(ctx, persistence.Entry{TID: randomTID(), CampaignID: camp, PublisherID: pub, ParticipantID: p.ID,
			QuotaIDs: []int64{q.ID}, RespondentID: "R1"})
		if err != nil || a.Refused != "" {
			t.Fatalf("admit: %+v %v", a, err)
		}
		return a.TID
	}
	tid := admit()
	var id int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM sessions WHERE tid = $1`, tid).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if tid[:5] != fmt.Sprintf("%05x", id>>20) {
		t.Errorf("tid %s of session %d does not name its block %x", tid, id, id>>20)
	}
	// A session stored with a tid that names another block (as any random tid would), and
	// one whose block trails its random digits, as tids had it until 2026-11-27.
	legacy := "fffff" + randomTID()[:27]
	trailing := randomTID()[:27] + fmt.Sprintf("%05x", id>>20)
	for _, old := range []string{legacy, trailing} {
		if _, err := db.Sessions.StartTestSession(ctx, old, camp); err != nil {
			t.Fatal(err)
		}
	}
	unknown := randomTID()

	for _, want := range []string{tid, legacy, trailing} {
		s, err := db.Sessions.SessionByTID(ctx, want)
		if err != nil || s.TID != want {
			t.Errorf("SessionByTID(%s) = %q, %v", want, s.TID, err)
		}
	}
	if _, err := db.Sessions.SessionByTID(ctx, unknown); err == nil {
		t.Errorf("SessionByTID(unknown) found a session")
	}
	r := db.Sessions.NewSessionReader(2)
	defer r.Close()
	for _, want := range []string{tid, legacy, trailing, admit()} {
		s, err := r.ByTID(ctx, want)
		if err != nil || s.TID != want {
			t.Errorf("reader ByTID(%s) = %q, %v", want, s.TID, err)
		}
	}
	if _, err := r.ByTID(ctx, unknown); err == nil {
		t.Errorf("reader ByTID(unknown) found a session")
	}

	// An offer's session in progress is found through the participant's latest entry into
	// the campaign (participations), by its id, whatever its partition's age; while a later
	// entry from another offer is the latest, among the campaign's sessions from the floor up:
	// the latest partition whose first entry is older than any offer.
	var parts int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'sessions'::regclass`).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	const nonce = 4242
	offered, err := db.Sessions.Admit(ctx, persistence.Entry{TID: randomTID(), CampaignID: camp, PublisherID: pub, ParticipantID: p.ID,
		QuotaIDs: []int64{q.ID}, RespondentID: "R1", OfferNonce: nonce})
	if err != nil || offered.Refused != "" {
		t.Fatalf("admit: %+v %v", offered, err)
	}
	resumable := func() bool {
		t.Helper()
		a, ok, err := db.Sessions.OfferSession(ctx, p.ID, camp, nonce)
		if err != nil {
			t.Fatal(err)
		}
		return ok && a.TID == offered.TID
	}
	if !resumable() {
		t.Fatal("the offer's session is not found")
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE session_partitions SET first_entered_at = now() - interval '2 days'`); err != nil {
		t.Fatal(err)
	}
	if !resumable() {
		t.Error("the offer's session is not found once every partition's first entry is old")
	}
	// sessions_p0 lies below the floor: the scan for an offer whose session is not the
	// latest prunes it when the floor is known (Append runs its partitions in order, so it
	// would be read first).
	if plan := explain(db.Pool, persistence.OfferSessionSQL, p.ID, camp, int64(nonce)); !regexp.MustCompile(`on sessions_p0 s\w* \(never executed\)`).MatchString(plan) {
		t.Errorf("the offer's session lookup reads the partition below the floor:\n%s", plan)
	}

	// The lookups read only the partitions of the tid's block, planned once for every tid (a
	// generic plan, pruned when it starts).
	if parts < 3 {
		t.Fatalf("%d partitions of sessions: the pruning is not tested", parts)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET plan_cache_mode`)
	lo, hi := (id>>20)<<20, ((id>>20)+1)<<20
	text := explain(conn.Conn(), persistence.SessionInBlockSQL, tid, lo, hi)
	// A block lies in at most two partitions (their bounds are not the blocks').
	if n := len(regexp.MustCompile(`on sessions_\w+ s`).FindAllString(text, -1)); n < 1 || n > 2 || n >= parts {
		t.Errorf("the lookup reads %d of %d partitions:\n%s", n, parts, text)
	}
	// The callbacks' coalesced lookups name the partitions of the block, at most two.
	lookups := persistence.PartLookups(ctx, db, lo, hi)
	if n := len(lookups); n < 1 || n > 2 || n >= parts {
		t.Fatalf("the coalesced lookups read %d of %d partitions: %q", n, parts, lookups)
	}
	lookup := func(tids ...string) int {
		t.Helper()
		m := map[string][]string{}
		for _, sql := range lookups {
			m[sql] = tids
		}
		got := 0
		err := persistence.SendPartLookups(ctx, conn, m, func(rows pgx.Rows) error {
			for rows.Next() {
				got++
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := lookup(tid); got != 1 {
		t.Fatalf("lookup: %d of 1 session", got)
	}
	// The session's partition is analyzed only when the test says so.
	var part string
	if err := conn.QueryRow(ctx, `SELECT tableoid::regclass::text FROM sessions WHERE id = $1`, id).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE `+part+` SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	// A block as a busy marketplace fills it: tens of thousands of sessions (at its top, clear
	// of the sequence), not yet analyzed. The lookups' plans, made when the block held one
	// session, are kept (generic plans: no planning per call) and still probe the tid index.
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (id, tid, campaign_id, buyer_id, publisher_id, participant_id)
		SELECT $1::bigint - i, 'fill-' || i, $2, $3, $4, $5 FROM generate_series(1, 20000) i`, hi, camp, buyer.ID, pub, p.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if got := lookup(tid, "fill-7", "fill-19999"); got != 3 {
			t.Fatalf("lookup %d: %d of 3 sessions", i, got)
		}
	}
	rows, err := conn.Query(ctx, `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = ANY($1)`, lookups)
	if err != nil {
		t.Fatal(err)
	}
	type prepared struct {
		name            string
		generic, custom int64
	}
	stmts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (prepared, error) {
		var s prepared
		return s, row.Scan(&s.name, &s.generic, &s.custom)
	})
	if err != nil || len(stmts) != len(lookups) {
		t.Fatalf("prepared lookups %+v (%v), want %d", stmts, err, len(lookups))
	}
	// The plans kept probe the partition holding them by its tid index, not filtered.
	probed := false
	for _, st := range stmts {
		if st.generic < 8 || st.custom != 0 {
			t.Errorf("a coalesced lookup ran %d generic and %d custom plans, want generic plans only", st.generic, st.custom)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE `+pgx.Identifier{st.name}.Sanitize()+
			`('{fill-7,fill-19999}')`, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Rows Removed by Filter") {
			t.Errorf("the coalesced lookup filters the partition's sessions:\n%s", text)
		}
		probed = probed || regexp.MustCompile(`Index Scan[^\n]* (using |on )sessions_\w+_tid[^\n]*actual rows=2 `).MatchString(text)
	}
	if !probed {
		t.Errorf("no coalesced lookup found the two sessions by the tid index")
	}
	// The callbacks' outcomes name the session's partition once its statistics count enough
	// sessions to plan it by name (before, a plan could read the partition whole: see
	// sessionparts.go), and their generic plan probes that partition's primary key alone.
	if got := persistence.OutcomesOn(ctx, db, id, id+1); got != persistence.RecordOutcomesSQL {
		t.Errorf("outcomes name a partition never analyzed:\n%.120s", got)
	}
	var filled int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+part+` WHERE tid LIKE 'fill-%'`).Scan(&filled); err != nil || filled != 20000 {
		t.Fatalf("%d of the 20,000 sessions filled are in the session's partition %s (%v)", filled, part, err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE `+part); err != nil {
		t.Fatal(err)
	}
	named := persistence.OutcomesOn(ctx, db, id, id+1)
	if !strings.Contains(named, "UPDATE "+pgx.Identifier{part}.Sanitize()+" s ") {
		t.Fatalf("outcomes of an analyzed partition of 20,000 sessions do not name it %s:\n%.300s", part, named)
	}
	if got := persistence.OutcomesOn(ctx, db, lo, hi+1<<30); got != persistence.RecordOutcomesSQL {
		t.Errorf("outcomes of ids across partitions name one of them")
	}
	func() {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `PREPARE named_outcomes AS `+named, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
		defer conn.Exec(ctx, `DEALLOCATE named_outcomes`, pgx.QueryExecModeSimpleProtocol)
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE named_outcomes(
			'{`+fmt.Sprint(id)+`}', '{complete}', ARRAY[now()], '{10000}', '{100}', '{""}', '{0}', '{""}', '{0}', 'tids_test', '{100}', '{true}')`,
			pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if n := len(regexp.MustCompile(`Scan[^\n]* on sessions_\w+ s\w* \(actual`).FindAllString(text, -1)); n != 1 ||
			!regexp.MustCompile(`Index Scan using sessions_\w+_pkey on sessions_\w+ s\w* \(actual rows=1 `).MatchString(text) {
			t.Errorf("the named outcomes read %d partitions of sessions, or not by the session's id:\n%s", n, text)
		}
	}()
	// A callback through the named statement (db's list names the partition now).
	done := admit()
	s, err := db.Sessions.SessionByTID(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if got := persistence.OutcomesOn(ctx, db, s.ID, s.ID+1); got != named {
		t.Fatalf("the session %d is not in the named partition", s.ID)
	}
	res, err := db.Sessions.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: "complete", At: time.Now(), PayoutUSD: 10000})
	if err != nil || !res.Decided || !res.Held {
		t.Fatalf("RecordOutcome through the named partition: %+v, %v", res, err)
	}
	var outcome string
	var completes, inProgress int
	if err := db.Pool.QueryRow(ctx, `SELECT s.outcome, q.completes, q.in_progress FROM sessions s, campaign_quotas q
		WHERE s.tid = $1 AND q.id = $2`, done, q.ID).Scan(&outcome, &completes, &inProgress); err != nil {
		t.Fatal(err)
	}
	if outcome != "complete" || completes != 1 {
		t.Errorf("after a complete through the named partition: outcome %q, quota completes %d (in progress %d)", outcome, completes, inProgress)
	}

	// The callbacks' batch statement probes the session's id in its own partition only, even
	// from a generic plan (run and rolled back).
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	text = explain(tx, persistence.RecordOutcomesSQL, []int64{id}, []string{"complete"}, []time.Time{time.Now()},
		[]int64{10000}, []int64{100}, []string{""}, []int64{0}, []string{""}, []int64{0}, "tids_test", []int64{100}, []bool{true})
	// Partitions pruned for each probe show as never executed.
	if n := len(regexp.MustCompile(`Scan[^\n]* on sessions_\w+ s\w* \(actual`).FindAllString(text, -1)); n != 1 ||
		!regexp.MustCompile(`Index Scan using sessions_\w+_pkey on sessions_\w+ s\w* \(actual rows=1 `).MatchString(text) {
		t.Errorf("the outcome batch reads %d of %d partitions of sessions, or not by the session's id:\n%s", n, parts, text)
	}
}

// TestSessionReaderNewPartition: the coalesced reader finds a session stored in a partition
// created after it last listed them, and one whose tid names a block no partition holds.
func TestSessionReaderNewPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "new-partition@example.test")
	pub := newPublisher(t, db)
	camp, quota := newActiveCampaign(t, db, buyer, "New partition", 0)
	p, err := db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub, User: "new-partition-user", CountryID: 1},
		"test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	policy := persistence.PartitionPolicy{MinIDs: 1 << 20}
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, policy); err != nil {
		t.Fatal(err)
	}
	admit := func() string {
		t.Helper()
		a, err := db.Sessions.Admit(ctx, persistence.Entry{TID: randomTID(), CampaignID: camp, PublisherID: pub, ParticipantID: p.ID,
			QuotaIDs: []int64{quota}, RespondentID: "R1"})
		if err != nil || a.Refused != "" {
			t.Fatalf("admit: %+v %v", a, err)
		}
		return a.TID
	}
	r := db.Sessions.NewSessionReader(1)
	defer r.Close()
	found := func(tid string) bool {
		t.Helper()
		s, err := r.ByTID(ctx, tid)
		if err != nil && fault.KindOf(err) != fault.KindNotFound {
			t.Fatal(err)
		}
		return err == nil && s.TID == tid
	}
	if first := admit(); !found(first) {
		t.Fatal("the first session is not found")
	}
	// Partitions past the list the reader read; the sequence moved into the last of them.
	ps, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	end := ps[len(ps)-1].IDTo
	policy.Ahead = len(ps) + 3
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `SELECT setval('sessions_id_seq', $1)`, end+2<<20+5); err != nil {
		t.Fatal(err)
	}
	later := admit()
	if !found(later) { // at once: through every partition
		t.Error("a session in a partition created since is not found at once")
	}
	time.Sleep(1100 * time.Millisecond)
	if !found(later) { // the list read again
		t.Error("a session in a partition created since is not found a second later")
	}
	if unknown := "fffff" + later[5:]; found(unknown) {
		t.Error("a tid of a block no partition holds was found")
	}
}
