package persistence_test

import (
	"context"
	"slices"
	"testing"

	"github.com/switchboard/switchboard/persistence"
)

// TestChangesAtPosition: after a position, the catch-up reads name exactly the campaigns and
// participants changed since, in batches, and the entries of later sessions; a transaction
// that was open when the position was read and commits after it is re-read, although its
// change was made before.
func TestChangesAtPosition(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "position@example.test")
	pub := newPublisher(t, db)
	c1, _ := newActiveCampaign(t, db, buyer, "before", nil)
	c2, _ := newActiveCampaign(t, db, buyer, "changed", nil)
	participant := func(user string) int64 {
		t.Helper()
		var id int64
		if err := db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
			VALUES ($1, $2, (SELECT min(id) FROM countries), '{"42": [30]}') RETURNING id`, pub, user).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	enter := func(campaign, participant int64) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, entered_at)
			VALUES (md5(random()::text), $1, $2, $3, now())`, campaign, buyer, participant); err != nil {
			t.Fatal(err)
		}
	}
	p1, p2 := participant("before-1"), participant("before-2")
	enter(c1, p1)

	// A transaction open across the position: its update was made before, its commit after.
	open, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx)
	if _, err := open.Exec(ctx, `UPDATE participants SET country_id = country_id WHERE id = $1`, p2); err != nil {
		t.Fatal(err)
	}
	pos, err := db.Feed.ChangePosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET cpi_cents = cpi_cents + 1 WHERE id = $1`, c2); err != nil {
		t.Fatal(err)
	}
	var later []int64
	for i := range 5 {
		later = append(later, participant("after-"+string(rune('a'+i))))
	}
	enter(c2, p1)
	enter(c1, later[0])

	camps, err := db.Feed.CampaignsChangedAt(ctx, pos.XID)
	if err != nil || !slices.Equal(camps, []int64{c2}) {
		t.Fatalf("campaigns changed: %v %v, want [%d]", camps, err, c2)
	}
	var got []int64
	n, err := db.Feed.ParticipantsChangedAt(ctx, pos.XID, 2, func(p persistence.PanelParticipant) error {
		if len(p.Answers) != 1 || p.User == "" {
			t.Errorf("participant %d read as %+v", p.ID, p)
		}
		got = append(got, p.ID)
		return nil
	})
	want := append([]int64{p2}, later...)
	if err != nil || n != int64(len(want)) || !slices.Equal(got, want) {
		t.Fatalf("participants changed: %v (%d) %v, want %v", got, n, err, want)
	}
	var entries [][2]int64
	if _, err := db.Feed.EntriesAfter(ctx, pos.SessionID, func(pid, cid, at int64) { entries = append(entries, [2]int64{pid, cid}) }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(entries, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	if !slices.Equal(entries, [][2]int64{{p1, c2}, {later[0], c1}}) {
		t.Fatalf("entries after the position: %v", entries)
	}
	if pos2, err := db.Feed.ChangePosition(ctx); err != nil || pos2.XID <= pos.XID || pos2.SessionID < pos.SessionID+2 {
		t.Fatalf("position did not advance: %+v then %+v (%v)", pos, pos2, err)
	}
}
