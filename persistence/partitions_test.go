package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestSessionsPartitionConversion: migration 0036 turns a populated sessions table into a
// partitioned one while a writer keeps inserting sessions. Every row and reference
// survives, the references hold, new sessions land in new partitions, and no insert waits
// more than a few seconds: the steps that hold an exclusive lock change only the catalog.
func TestSessionsPartitionConversion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := dbBelow(t, 36)
	b, _, err := db.Accounts.CreateBuyer(ctx, "partitions@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	// The campaign is written as the code of that schema wrote it (today's NotifyCampaigns
	// records an epoch on campaigns, a column of migration 0039).
	var cid int64
	if err := db.Pool.QueryRow(ctx, `WITH p AS (INSERT INTO projects (buyer_id, name, project_type, is_draft)
		VALUES ($1, 'Partitioned', 'one_time', true) RETURNING id)
		INSERT INTO campaigns (buyer_id, project_id, name, cpi_cents, incidence, length_of_interview, supplier_link, country_language_id)
		SELECT $1, p.id, 'Partitioned', 100, 50, 10, 'https://survey.example/s?tid={ID}', 1 FROM p RETURNING id`, b.ID).Scan(&cid); err != nil {
		t.Fatal(err)
	}
	const seeded = 200_000
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, entered_at, outcome)
		SELECT md5(g::text), $1, $2, now() - (($3 - g) * interval '10 seconds'), CASE WHEN g % 3 = 0 THEN 'complete' END
		FROM generate_series(1, $3) g`, cid, b.ID, seeded); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO screener_answers (session_id, question_id, pre_codes)
		SELECT id, 100001, '{1}' FROM sessions WHERE id % 100 = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE sessions`); err != nil {
		t.Fatal(err)
	}

	// The writer: one session at a time through its own pool, as entries arrive.
	bw := migrateBesideWriter(t, db, url, func(ctx context.Context, w *persistence.DB, i int) error {
		_, err := w.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id) VALUES ($1, $2, $3)`,
			fmt.Sprintf("writer-%d", i), cid, b.ID)
		return err
	})
	t.Logf("conversion of %d sessions: %v; %d concurrent inserts, the slowest %v", seeded, bw.took, bw.inserted, bw.slowest)
	if bw.slowest > 3*time.Second {
		t.Errorf("an insert waited %v during the conversion, want at most 3s", bw.slowest)
	}

	var kind string
	var total, answers, inOld int64
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'sessions'::regclass),
		(SELECT count(*) FROM sessions), (SELECT count(*) FROM screener_answers), (SELECT count(*) FROM sessions_p0)`).
		Scan(&kind, &total, &answers, &inOld); err != nil {
		t.Fatal(err)
	}
	if kind != "p" || total != seeded+bw.inserted || answers != seeded/100 || inOld < seeded {
		t.Fatalf("after: relkind %q, %d sessions (want %d), %d answers (want %d), %d in sessions_p0", kind, total,
			seeded+bw.inserted, answers, seeded/100, inOld)
	}
	// Every reference to and from sessions is valid and enforced, once (the campaign's
	// is gone since 0044).
	var fks []string
	rows, err := db.Pool.Query(ctx, `SELECT conrelid::regclass || '.' || conname || ' ' || convalidated FROM pg_constraint
		WHERE contype = 'f' AND (confrelid = 'sessions'::regclass OR conrelid IN ('sessions'::regclass, 'sessions_p0'::regclass))
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		fks = append(fks, s)
	}
	want := []string{
		"prescreen_responses.prescreen_responses_session_id_fkey true",
		"screener_answers.screener_answers_session_id_fkey true",
		"sessions.sessions_chain_id_fkey true",
		"sessions_p0.sessions_chain_id_fkey true",
	}
	if fmt.Sprint(fks) != fmt.Sprint(want) {
		t.Errorf("foreign keys:\n got %q\nwant %q", fks, want)
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO screener_answers (session_id, question_id) VALUES (-1, 1)`)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Errorf("an answer of no session: %v, want a foreign key violation", err)
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM sessions WHERE id = 100`); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM screener_answers WHERE session_id = 100`).Scan(&answers); err != nil || answers != 0 {
		t.Errorf("answers of a deleted session: %d, %v", answers, err)
	}

	// New sessions go to the partitions above sessions_p0, whose tid stays unique.
	var part, tid string
	if err := db.Pool.QueryRow(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id) VALUES ('after', $1, $2)
		RETURNING tableoid::regclass::text, tid`, cid, b.ID).Scan(&part, &tid); err != nil {
		t.Fatal(err)
	}
	if part == "sessions_p0" {
		t.Errorf("a new session landed in %s", part)
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id) VALUES ('after', $1, $2)`, cid, b.ID)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("a second session with tid %q: %v, want a unique violation", tid, err)
	}
	// The old table's indexes serve it as a partition: none was built again.
	var idx int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indrelid = 'sessions_p0'::regclass`).Scan(&idx); err != nil || idx != 8 {
		t.Errorf("sessions_p0 has %d indexes (%v), want the old table's 8", idx, err)
	}
}

// TestEnsureSessionPartitions: partitions are kept ahead of the sequence, running again
// creates nothing, and the sequence reaching them makes more.
func TestEnsureSessionPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	policy := persistence.PartitionPolicy{Ahead: 3, MinIDs: 1000}
	above := func() (n int, top int64) {
		ps, err := db.Maintenance.SessionPartitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var cur int64
		if err := db.Pool.QueryRow(ctx, `SELECT last_value FROM sessions_id_seq`).Scan(&cur); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.IDFrom > cur {
				n++
			}
			top = max(top, p.IDTo)
		}
		return n, top
	}
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, policy); err != nil {
		t.Fatal(err)
	}
	n, top := above()
	if n < 3 {
		t.Fatalf("%d partitions above the sequence, want 3", n)
	}
	again, err := db.Maintenance.EnsureSessionPartitions(ctx, policy)
	if err != nil || len(again) != 0 {
		t.Fatalf("second run created %v (%v), want none", again, err)
	}
	if n2, top2 := above(); n2 != n || top2 != top {
		t.Fatalf("second run: %d partitions up to %d, want %d up to %d", n2, top2, n, top)
	}
	// The sequence jumps to the last partition: more are made, sized by MinIDs.
	if _, err := db.Pool.Exec(ctx, `SELECT setval('sessions_id_seq', $1 - 10)`, top); err != nil {
		t.Fatal(err)
	}
	made, err := db.Maintenance.EnsureSessionPartitions(ctx, policy)
	if err != nil || len(made) != 3 || made[0] != fmt.Sprintf("sessions_p%d", top) {
		t.Fatalf("after the sequence moved: created %v (%v), want 3 from sessions_p%d", made, err, top)
	}
	b, _, err := db.Accounts.CreateBuyer(ctx, "ensure@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	cid := newCampaign(t, db, b.ID, "Ahead")
	var part string
	if err := db.Pool.QueryRow(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id)
		SELECT 'x' || g, $1, $2 FROM generate_series(1, 20) g RETURNING tableoid::regclass::text`, cid, b.ID).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Maintenance.SessionPartitions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, policy); err != nil {
		t.Fatal(err)
	}
	ps, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == made[0] && p.FirstEnteredAt.IsZero() {
			t.Errorf("%s holds sessions but has no time range recorded: %+v", p.Name, p)
		}
	}
}

// TestPurgeDeliveredOutbox: only delivered rows older than the window leave, in batches.
func TestPurgeDeliveredOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pub, _, err := db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "P", CurrencyName: "c", ExchangeRate: 1,
		RevenueShare: 0.5, RedirectURL: "https://p.example/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		tid       string
		delivered string // interval ago; "" never
		dead      bool
	}{
		{"old-1", "40 days", false}, {"old-2", "31 days", false}, {"old-3", "35 days", false},
		{"recent", "29 days", false}, {"pending", "", false}, {"dead", "", true},
	} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url, created_at, delivered_at, dead_at)
			VALUES ($1, 'outcome', $2, 'https://p.example/pb', now() - interval '50 days',
			now() - NULLIF($3, '')::interval, CASE WHEN $4 THEN now() - interval '45 days' END)`, r.tid, pub.ID, r.delivered, r.dead); err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	for {
		n, err := db.Maintenance.PurgeDeliveredOutbox(ctx, 30*24*time.Hour, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
		if n < 2 {
			break
		}
	}
	if fmt.Sprint(got) != "[2 1]" {
		t.Errorf("batches %v, want [2 1]", got)
	}
	var left []string
	rows, err := db.Pool.Query(ctx, `SELECT tid FROM postback_outbox ORDER BY tid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	if fmt.Sprint(left) != "[dead pending recent]" {
		t.Errorf("left %v, want [dead pending recent]", left)
	}
}

// TestAnalyzeGrowingSessionPartition: the partition of sessions being filled is analyzed
// once it has grown, as the other routing tables are, and the partitioned table's own
// statistics (autovacuum never gathers those; without them a callback batch's plan crossed
// jit_above_cost) when the whole table has about doubled: analyzing it samples every
// partition again, so a young partition's doublings beside a big table do not.
func TestAnalyzeGrowingSessionPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, _, err := db.Accounts.CreateBuyer(ctx, "analyze@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	cid := newCampaign(t, db, b.ID, "Analyzed")
	// insert writes n sessions with ids from id into the partition holding them, with
	// autovacuum off there (only the step under test analyzes), and waits until the table
	// statistics count every row of sessions (backends report within a second or so).
	total := int64(0)
	insert := func(id int64, n int) string {
		t.Helper()
		var part string
		if err := db.Pool.QueryRow(ctx, `INSERT INTO sessions (id, tid, campaign_id, buyer_id)
			SELECT $1::bigint + g, 'a' || ($1::bigint + g), $2, $3 FROM generate_series(0, $4::int - 1) g
			RETURNING tableoid::regclass::text`, id, cid, b.ID, n).Scan(&part); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `ALTER TABLE `+part+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
		total += int64(n)
		deadline := time.Now().Add(10 * time.Second)
		for {
			var live int64
			if err := db.Pool.QueryRow(ctx, `SELECT coalesce(sum(n_live_tup), 0)::bigint FROM pg_stat_user_tables
				WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'sessions'::regclass)`).Scan(&live); err != nil {
				t.Fatal(err)
			}
			if live >= total {
				return part
			}
			if time.Now().After(deadline) {
				t.Fatalf("the statistics count %d sessions after %d were written", live, total)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	parts, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil || len(parts) < 2 {
		t.Fatalf("partitions %v (%v), want two at least", parts, err)
	}
	first, second := insert(parts[0].IDFrom, 2000), ""
	for _, step := range []struct {
		id   int64 // first id written, rows
		rows int
		want []string
		why  string
	}{
		{0, 0, []string{first, "sessions"}, "2,000 sessions, never analyzed: the partition and the table"},
		{parts[1].IDFrom, 1500, []string{"<second>"}, "1,500 sessions in the next partition: it alone (3,500 rows in all, 2,000 at the last analyze)"},
		{parts[1].IDFrom + 1500, 1000, []string{"sessions"}, "1,000 more there: not doubled there, but 4,500 rows in all"},
		{parts[1].IDFrom + 2500, 500, nil, "500 more: nothing"},
	} {
		if step.rows > 0 {
			part := insert(step.id, step.rows)
			if second == "" {
				second = part
			}
		}
		want := slices.Clone(step.want)
		for i, w := range want {
			if w == "<second>" {
				want[i] = second
			}
		}
		got, err := db.Maintenance.AnalyzeGrowingTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = slices.DeleteFunc(got, func(s string) bool { return !strings.HasPrefix(s, "sessions") })
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: analyzed %v, want %v", step.why, got, want)
		}
	}
	var stats bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'sessions' AND inherited)`).Scan(&stats); err != nil || !stats {
		t.Fatalf("sessions has no statistics of its own (%v)", err)
	}
}

// TestEntryChecksSeeEveryPartition: an entry's reentry and relationship checks read the
// participant's latest entry into each campaign (participations, kept by a trigger on
// sessions), so a session counts wherever it is stored: in a partition a month older than
// the campaign, in the partition being filled, or with an id drawn before a newer partition
// began; a session older than the reentry interval no longer bars an entry.
func TestEntryChecksSeeEveryPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	b, _, err := db.Accounts.CreateBuyer(ctx, "floor@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	campaign := func(name string) int64 {
		t.Helper()
		id := newCampaign(t, db, b.ID, name)
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, reentry_interval = NULL WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO campaign_quotas (campaign_id, name, num_respondents) VALUES ($1, 'all', 100)`, id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	var quota = func(c int64) []int64 {
		var q int64
		if err := db.Pool.QueryRow(ctx, `SELECT id FROM campaign_quotas WHERE campaign_id = $1`, c).Scan(&q); err != nil {
			t.Fatal(err)
		}
		return []int64{q}
	}
	// Three partitions above the first: sessions go where the sequence is set.
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{Ahead: 3, MinIDs: 1000}); err != nil {
		t.Fatal(err)
	}
	ps, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil || len(ps) < 4 {
		t.Fatalf("partitions %+v (%v), want 4", ps, err)
	}
	p1, p2, p3 := ps[len(ps)-3], ps[len(ps)-2], ps[len(ps)-1]
	if _, err := db.Pool.Exec(ctx, `UPDATE session_partitions SET first_entered_at = now() - interval '30 days' WHERE name = $1`, p1.Name); err != nil {
		t.Fatal(err)
	}
	// store writes a session of c with that id, entered ago, and its respondent id as an
	// admission stores it.
	store := func(c, participant, id int64, ago time.Duration) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `WITH r AS (INSERT INTO respondents (buyer_id, participant_id, respondent_id)
				VALUES ($3::bigint, $4::bigint, 'R' || $4::bigint) ON CONFLICT DO NOTHING)
			INSERT INTO sessions (id, tid, campaign_id, buyer_id, participant_id, entered_at)
			VALUES ($1, md5(random()::text), $2, $3, $4, now() - $5::interval)`, id, c, b.ID, participant, ago); err != nil {
			t.Fatal(err)
		}
	}
	admit := func(c, participant int64) string {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `SELECT setval('sessions_id_seq', $1)`, p3.IDFrom+participant%100*10); err != nil {
			t.Fatal(err)
		}
		a, err := db.Sessions.Admit(ctx, persistence.Entry{TID: fmt.Sprintf("%027x00000", participant), CampaignID: c, PublisherID: 1,
			ParticipantID: participant, QuotaIDs: quota(c), RespondentID: fmt.Sprint("R", participant)})
		if err != nil {
			t.Fatal(err)
		}
		return a.Refused
	}

	old := campaign("in field a month")
	store(old, 101, p1.IDFrom+1, 30*24*time.Hour)
	store(old, 102, p2.IDFrom+1, time.Hour)
	related := campaign("related")
	if _, err := db.Campaigns.CreateRelationship(ctx, b.ID, related, old); err != nil {
		t.Fatal(err)
	}
	store(old, 103, p1.IDFrom+2, 30*24*time.Hour)
	store(old, 104, p2.IDFrom+2, time.Hour)
	late := campaign("entered as p3 began")
	store(late, 105, p2.IDFrom+3, 0)
	hourly := campaign("reentry after an hour")
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET reentry_interval = 60 WHERE id = $1`, hourly); err != nil {
		t.Fatal(err)
	}
	store(hourly, 106, p1.IDFrom+4, 2*time.Hour)
	store(hourly, 107, p2.IDFrom+4, 10*time.Minute)
	store(hourly, 108, p1.IDFrom+5, 10*time.Minute) // a smaller id entered later: the later entry is what counts
	store(hourly, 108, p2.IDFrom+5, 2*time.Hour)

	for _, c := range []struct {
		name                  string
		campaign, participant int64
		want                  string
	}{
		{"a session of the campaign a month old, in p1", old, 101, persistence.RefusedReentry},
		{"a session of the campaign in p2", old, 102, persistence.RefusedReentry},
		{"a session of the related campaign in p1", related, 103, persistence.RefusedRelated},
		{"a session of the related campaign in p2", related, 104, persistence.RefusedRelated},
		{"a session drawn just before p3 began", late, 105, persistence.RefusedReentry},
		{"a session before the reentry interval", hourly, 106, ""},
		{"a session within the reentry interval", hourly, 107, persistence.RefusedReentry},
		{"a session within the interval, and a later id before it", hourly, 108, persistence.RefusedReentry},
	} {
		if got := admit(c.campaign, c.participant); got != c.want {
			t.Errorf("%s: refused %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSessionPartitionsEndOnBlocks: partitions of a tid block or more end where a block
// ends, so that past the first one made (which starts where the partitions before it
// ended) each block lies in one partition and a tid's lookup names one; smaller ones keep
// their size.
func TestSessionPartitionsEndOnBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	const block = 1 << 20
	before, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{Ahead: 4}); err != nil {
		t.Fatal(err)
	}
	ps, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	made := ps[len(before):]
	if len(made) < 2 {
		t.Fatalf("made %+v, want at least 2 partitions", made)
	}
	for i, p := range made {
		if p.IDTo%block != 0 || p.IDTo-p.IDFrom < block-1 {
			t.Errorf("partition %s [%d, %d) does not end on a block or spans less than one", p.Name, p.IDFrom, p.IDTo)
		}
		if i > 0 {
			lo := p.IDFrom
			if n := len(persistence.PartLookups(ctx, db, lo, lo+block)); n != 1 {
				t.Errorf("a block of partition %s is looked up in %d partitions, want 1", p.Name, n)
			}
		}
	}
	// Smaller partitions (a test's, or a policy's for a tiny marketplace) keep their size.
	top := ps[len(ps)-1].IDTo
	if _, err := db.Pool.Exec(ctx, `SELECT setval('sessions_id_seq', $1 - 10)`, top); err != nil {
		t.Fatal(err)
	}
	small, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{Ahead: 2, MinIDs: 1000})
	if err != nil || len(small) != 2 {
		t.Fatalf("made %v (%v), want 2", small, err)
	}
	ps, err = db.Maintenance.SessionPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := ps[len(ps)-1]; last.IDTo-last.IDFrom != 1000 {
		t.Errorf("a partition of 1,000 ids spans [%d, %d)", last.IDFrom, last.IDTo)
	}
}

// TestSessionCampaignReferenceWaitsBriefly: migration 0044 drops the session's foreign key
// to campaigns under an exclusive lock on sessions. Behind a long reader of sessions (an
// export) it gives up after its lock timeout instead of queueing every entry behind its
// request, leaves the reference as it was, and succeeds at the next try once the reader is
// done.
func TestSessionCampaignReferenceWaitsBriefly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := dbBelow(t, 44)
	references := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE contype = 'f'
			AND conrelid = 'sessions'::regclass AND confrelid = 'campaigns'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := references(); n != 1 {
		t.Fatalf("before 0044: %d references from sessions to campaigns, want 1", n)
	}
	reader, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx) //nolint:errcheck // ends it on a failure; after the Rollback below, a no-op
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM sessions`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	mctx, cancel := context.WithTimeout(ctx, 20*time.Second) // without its lock timeout, 0044 would wait for the reader
	_, err = db.Migrate(mctx)
	cancel()
	waited := time.Since(began)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("0044 behind a reader of sessions: %v after %v, want a lock timeout", err, waited)
	}
	if waited > 8*time.Second {
		t.Errorf("0044 waited %v for its lock, want about 5 s", waited)
	}
	if n := references(); n != 1 {
		t.Errorf("after the failed try: %d references, want the 1 before it", n)
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if n := references(); n != 0 {
		t.Errorf("after 0044: %d references from sessions to campaigns, want none", n)
	}
}
