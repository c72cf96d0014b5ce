package persistence_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/switchboard/switchboard/persistence"
)

// explainAdmitChecks runs the admission's checks for one entry (campaign, participant,
// offer nonce) as an admission does, a generic plan after the admission's settings, in a
// transaction that first runs setup, and returns EXPLAIN ANALYZE's plan.
func explainAdmitChecks(t *testing.T, db *persistence.DB, setup string, campaign, participant, nonce int64) string {
	t.Helper()
	plan, _ := explainAdmitChecksGeneric(t, db, setup, campaign, participant, nonce)
	return plan
}

// explainAdmitChecksGeneric is explainAdmitChecks, also telling whether the plan run was a
// generic one (pg_prepared_statements).
func explainAdmitChecksGeneric(t *testing.T, db *persistence.DB, setup string, campaign, participant, nonce int64) (string, bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var plan []string
	var generic bool
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setup); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, persistence.AdmitSettingsSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `PREPARE admit_checks(bigint[], bigint[], bigint[]) AS `+persistence.AdmitChecksSQL); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, TIMING OFF) EXECUTE admit_checks('{%d}', '{%d}', '{%d}')`,
			campaign, participant, nonce), pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT generic_plans > 0 FROM pg_prepared_statements WHERE name = 'admit_checks'`).Scan(&generic); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DEALLOCATE admit_checks`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n"), generic
}

// planParticipant impanels a participant of partner pub and makes the partitions of
// sessions a serving database has, so that the checks' plans read them.
func planParticipant(t *testing.T, db *persistence.DB, pub int64) persistence.PanelParticipant {
	t.Helper()
	ctx := context.Background()
	p, err := db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub, User: "plan-user", CountryID: 1},
		"test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAdmitChecksNotCompiled: the admission's checks, planned once per connection (a
// generic plan), are not compiled when they run even when their plan's cost crosses
// jit_above_cost (here set to 0; in a bench run, stale statistics): seconds per call.
func TestAdmitChecksNotCompiled(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	camp := newCampaign(t, db, newBuyer(t, db, "plans@example.test"), "Plans")
	p := planParticipant(t, db, pub)
	// jit on as PostgreSQL's default has it (the pool's connections turn it off): the
	// admission's own setting is what this test is about.
	text, generic := explainAdmitChecksGeneric(t, db, `SET LOCAL jit = on; SET LOCAL jit_above_cost = 0`, camp, p.ID, 7)
	if !generic {
		t.Fatalf("not a generic plan:\n%s", text)
	}
	if strings.Contains(text, "JIT:") { // shown only with costs
		t.Errorf("the checks are compiled when they run:\n%s", text)
	}
}

// TestAdmitChecksReadNoSessions: the admission's checks read no partition of sessions
// (participations holds each participant's latest entry into each campaign), and an entry
// of a participant into a campaign of a buyer they never entered a campaign of (no
// respondent id for that buyer) does not look up the campaign's own participation; one into
// a campaign of a buyer they have entered does, and the stored rules still refuse a reentry.
func TestAdmitChecksReadNoSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	known, unknown := newBuyer(t, db, "known@example.test"), newBuyer(t, db, "unknown@example.test")
	p := planParticipant(t, db, pub)
	entered, enteredQuota := newActiveCampaign(t, db, known, "entered", nil)
	sibling, _ := newActiveCampaign(t, db, known, "same buyer", nil)
	other, _ := newActiveCampaign(t, db, unknown, "other buyer", nil)
	entry := func(c, q int64) persistence.Entry {
		return persistence.Entry{TID: randomTID(), CampaignID: c, PublisherID: pub, ParticipantID: p.ID, QuotaIDs: []int64{q},
			RespondentID: "R-" + fmt.Sprint(c), OfferNonce: 99}
	}
	if a, err := db.Sessions.Admit(ctx, entry(entered, enteredQuota)); err != nil || a.Refused != "" {
		t.Fatalf("first entry: %+v %v", a, err)
	}
	e := entry(entered, enteredQuota)
	e.OfferNonce = 100 // another offer: not a resume
	if a, err := db.Sessions.Admit(ctx, e); err != nil || a.Refused != persistence.RefusedReentry {
		t.Fatalf("second entry of the campaign: %+v %v, want refused %q", a, err, persistence.RefusedReentry)
	}

	// The lookup of the campaign's own participation: its condition, on the line after,
	// names the campaign. (The relationship checks read the related campaigns'
	// participations, which any buyer's campaign may be.)
	ownScan := regexp.MustCompile(`(?m)^.*Scan.* on participations p .*\n.*campaign_id = c\.id.*$`)
	for _, c := range []struct {
		name     string
		campaign int64
		read     bool // the campaign's own participation is looked up
	}{
		{"a campaign of a buyer entered before", sibling, true},
		{"a campaign of a buyer never entered", other, false},
	} {
		plan := explainAdmitChecks(t, db, `SELECT 1`, c.campaign, p.ID, 7)
		if regexp.MustCompile(`on sessions`).MatchString(plan) {
			t.Errorf("%s: the checks read sessions:\n%s", c.name, plan)
		}
		scans := ownScan.FindAllString(plan, -1)
		if len(scans) != 1 {
			t.Fatalf("%s: %d lookups of the campaign's participation in the plan, want 1:\n%s", c.name, len(scans), plan)
		}
		if read := !strings.Contains(scans[0], "(never executed)"); read != c.read {
			t.Errorf("%s: participation read %v, want %v:\n%s", c.name, read, c.read, plan)
		}
	}
}

// TestAdmitUnknownCampaign: sessions carry no foreign key to campaigns (0044: its per-row
// check locked the campaign's row on every entry), so the admission itself is what keeps a
// session from naming a campaign that does not exist: such an entry is refused and stores
// nothing, while one into a real campaign of the same batch is admitted.
func TestAdmitUnknownCampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	buyer := newBuyer(t, db, "unknown-campaign@example.test")
	p := planParticipant(t, db, pub)
	live, quota := newActiveCampaign(t, db, buyer, "real", nil)
	var fks int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE contype = 'f'
		AND conrelid = 'sessions'::regclass AND confrelid = 'campaigns'::regclass`).Scan(&fks); err != nil || fks != 0 {
		t.Fatalf("sessions has %d foreign keys to campaigns (%v), want none", fks, err)
	}
	missing := live + 1000
	out, err := db.AdmitBatch(ctx, []persistence.Entry{
		{TID: randomTID(), CampaignID: missing, PublisherID: pub, ParticipantID: p.ID, QuotaIDs: []int64{quota}, RespondentID: "R-missing"},
		{TID: randomTID(), CampaignID: live, PublisherID: pub, ParticipantID: p.ID, QuotaIDs: []int64{quota}, RespondentID: "R-real"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Refused != persistence.RefusedStatus || out[1].Refused != "" {
		t.Fatalf("verdicts %q and %q, want %q and admitted", out[0].Refused, out[1].Refused, persistence.RefusedStatus)
	}
	var stored, orphans int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM campaigns c WHERE c.id = s.campaign_id))
		FROM sessions s`).Scan(&stored, &orphans); err != nil {
		t.Fatal(err)
	}
	if stored != 1 || orphans != 0 {
		t.Errorf("%d sessions stored, %d of no campaign; want 1 and 0", stored, orphans)
	}
}
