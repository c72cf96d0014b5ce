package persistence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// participationsDrift compares participations with what sessions say it must hold, the
// latest session (by entry time, then id) of each (campaign, participant) among the sessions
// that are not test ones and have a participant: pairs missing, rows naming another session
// (or time, or nonce), rows of no such pair.
func participationsDrift(t *testing.T, db *persistence.DB) (missing, wrong, extra int) {
	t.Helper()
	err := db.Pool.QueryRow(context.Background(), `WITH want AS (
			SELECT DISTINCT ON (campaign_id, participant_id) campaign_id, participant_id, entered_at, id, offer_nonce FROM sessions
			WHERE NOT is_test AND participant_id IS NOT NULL ORDER BY campaign_id, participant_id, entered_at DESC, id DESC)
		SELECT count(*) FILTER (WHERE p.campaign_id IS NULL),
			count(*) FILTER (WHERE w.campaign_id IS NOT NULL AND p.campaign_id IS NOT NULL
				AND (p.session_id, p.entered_at, p.offer_nonce) IS DISTINCT FROM (w.id, w.entered_at, w.offer_nonce)),
			count(*) FILTER (WHERE w.campaign_id IS NULL)
		FROM want w FULL JOIN participations p USING (campaign_id, participant_id)`).Scan(&missing, &wrong, &extra)
	if err != nil {
		t.Fatal(err)
	}
	return missing, wrong, extra
}

// TestParticipationsFollowSessions: participations holds the latest entry of each
// (campaign, participant) however sessions are written: a batch naming one pair twice, test
// sessions and sessions without a participant (left out), a session moved back in time or
// made a test one, one deleted (all three only by hand: the pair is computed again), and an
// outcome (no change).
func TestParticipationsFollowSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, want int) {
		t.Helper()
		if missing, wrong, extra := participationsDrift(t, db); missing+wrong+extra != 0 {
			t.Errorf("%s: %d pairs missing, %d wrong, %d extra", step, missing, wrong, extra)
		}
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM participations`).Scan(&n); err != nil || n != want {
			t.Errorf("%s: %d participations (%v), want %d", step, n, err, want)
		}
	}
	// One statement: pair (1, 10) three times (the latest entered wins, not the largest id),
	// (1, 11), (2, 10) once, a test session of (3, 10), a session without a participant.
	exec(`INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, is_test, entered_at, offer_nonce) VALUES
		('a', 1, 1, 10, false, now() - interval '2 hours', 7), ('b', 1, 1, 10, false, now() - interval '1 hour', 8),
		('c', 1, 1, 10, false, now() - interval '3 hours', 9), ('d', 1, 1, 11, false, now(), NULL),
		('e', 2, 1, 10, false, now(), 5), ('f', 3, 1, 10, true, now(), NULL), ('g', 3, 1, NULL, false, now(), NULL)`)
	check("one insert", 3)
	var nonce int64
	if err := db.Pool.QueryRow(ctx, `SELECT offer_nonce FROM participations WHERE campaign_id = 1 AND participant_id = 10`).Scan(&nonce); err != nil || nonce != 8 {
		t.Errorf("pair (1, 10) holds nonce %d (%v), want 8: the session entered last", nonce, err)
	}
	exec(`INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id) VALUES ('h', 1, 1, 10)`)
	check("a later entry", 3)
	exec(`UPDATE sessions SET entered_at = now() - interval '1 day' WHERE tid = 'h'`)
	check("the latest moved back", 3)
	exec(`UPDATE sessions SET is_test = true WHERE tid = 'e'`)
	check("a session made a test one", 2)
	exec(`DELETE FROM sessions WHERE tid = 'b'`)
	check("the latest deleted", 2)
	exec(`UPDATE sessions SET outcome = 'complete', outcome_at = now() WHERE campaign_id = 1`)
	check("outcomes", 2)
	exec(`UPDATE sessions SET participant_id = 12 WHERE tid = 'd'`)
	check("a session given to another participant", 2)
}

// TestParticipationsMigration: migration 0045 fills participations from a populated
// sessions table while a writer keeps inserting sessions, so that no session stored before,
// during or after it is missing, and no insert waits more than a few seconds.
func TestParticipationsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := dbBelow(t, 45)
	const seeded = 100_000
	// 2,000 participants in 200 campaigns, some pairs entered more than once, 1% test sessions.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, is_test, entered_at, offer_nonce)
		SELECT md5(g::text), 1 + g % 200, 1, 1 + (g * 7919) % 2000, g % 100 = 0, now() - (($1 - g) * interval '1 second'), g
		FROM generate_series(1, $1) g`, seeded); err != nil {
		t.Fatal(err)
	}
	bw := migrateBesideWriter(t, db, url, func(ctx context.Context, w *persistence.DB, i int) error {
		_, err := w.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id) VALUES ($1, $2, 1, $3)`,
			fmt.Sprintf("writer-%d", i), 1+i%200, 1+i%3000)
		return err
	})
	t.Logf("0045 over %d sessions: %v; %d concurrent inserts, the slowest %v", seeded, bw.took, bw.inserted, bw.slowest)
	if bw.slowest > 3*time.Second {
		t.Errorf("an insert waited %v during the migration, want at most 3s", bw.slowest)
	}
	if bw.inserted == 0 {
		t.Fatal("no insert ran beside the migration")
	}
	if missing, wrong, extra := participationsDrift(t, db); missing+wrong+extra != 0 {
		t.Errorf("after 0045: %d pairs missing, %d wrong, %d extra", missing, wrong, extra)
	}
	// Run again (a failed run repeats the whole file): nothing changes.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 45`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("0045 again: %v", err)
	}
	if missing, wrong, extra := participationsDrift(t, db); missing+wrong+extra != 0 {
		t.Errorf("after 0045 again: %d pairs missing, %d wrong, %d extra", missing, wrong, extra)
	}
}

// TestResumeAnOfferNotTheLatest: in a campaign that lets a participant in again at once, an
// offer's link followed again resumes that offer's session in progress both while it is
// the participant's latest entry into the campaign (found by its id) and once a later
// entry from another offer is (found among the campaign's recent sessions); once it has an
// outcome, the link admits a new entry.
func TestResumeAnOfferNotTheLatest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	buyer := newBuyer(t, db, "resume@example.test")
	camp, quota := newActiveCampaign(t, db, buyer, "again at once", 0)
	p := planParticipant(t, db, pub)
	enter := func(nonce int64) persistence.Admission {
		t.Helper()
		a, err := db.Sessions.Admit(ctx, persistence.Entry{TID: randomTID(), CampaignID: camp, PublisherID: pub, ParticipantID: p.ID,
			QuotaIDs: []int64{quota}, RespondentID: "R-resume", OfferNonce: nonce})
		if err != nil || a.Refused != "" {
			t.Fatalf("entry of offer %d: %+v %v", nonce, a, err)
		}
		return a
	}
	resumes := func(step string, nonce int64, want string) {
		t.Helper()
		a := enter(nonce)
		if !a.Resumed || a.TID != want {
			t.Errorf("%s: entry %+v, want the session %s resumed", step, a, want)
		}
		s, ok, err := db.Sessions.OfferSession(ctx, p.ID, camp, nonce)
		if err != nil || !ok || s.TID != want {
			t.Errorf("%s: OfferSession = %+v %v %v, want %s", step, s, ok, err, want)
		}
	}
	first := enter(1)
	resumes("the latest entry's offer", 1, first.TID)
	second := enter(2)
	if second.Resumed || second.TID == first.TID {
		t.Fatalf("another offer's entry: %+v, want a new session", second)
	}
	resumes("an offer whose entry is not the latest", 1, first.TID)
	resumes("the latest again", 2, second.TID)
	if _, err := db.Pool.Exec(ctx, `UPDATE sessions SET outcome = 'complete', outcome_at = now() WHERE tid = $1`, first.TID); err != nil {
		t.Fatal(err)
	}
	if a := enter(1); a.Resumed || a.TID == first.TID {
		t.Errorf("the offer's link after its session's outcome: %+v, want a new session", a)
	}
}
