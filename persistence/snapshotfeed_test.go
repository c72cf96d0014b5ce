package persistence_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

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

// TestCountsAndBlocksChangedAtPosition: after a position, the counters' and the blocks'
// catch-up name exactly the campaigns whose quota or daily counts, and the participants
// whose blocks, a transaction at or after it wrote, including one open across the position
// whose write was made before it; each block read is the participant's latest.
func TestCountsAndBlocksChangedAtPosition(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "countspos@example.test")
	pub := newPublisher(t, db)
	c1, q1 := newActiveCampaign(t, db, buyer, "before", nil)
	c2, q2 := newActiveCampaign(t, db, buyer, "open across", nil)
	c3, _ := newActiveCampaign(t, db, buyer, "daily after", nil)
	c4, q4 := newActiveCampaign(t, db, buyer, "quota after", nil)
	exec := func(q any, sql string, args ...any) {
		t.Helper()
		type execer interface {
			Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
		}
		if _, err := q.(execer).Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	var p1, p2, p3 int64
	for i, p := range []*int64{&p1, &p2, &p3} {
		if err := db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
			VALUES ($1, $2, (SELECT min(id) FROM countries), '{}') RETURNING id`, pub, fmt.Sprint("blocked-", i)).Scan(p); err != nil {
			t.Fatal(err)
		}
	}
	block := func(q any, p int64, class string) {
		t.Helper()
		exec(q, `INSERT INTO quality_blocks (participant_id, publisher_id, user_identifier, rule_class, evidence, expires_at)
			VALUES ($1, $2, 'u', $3, '{}', now() + interval '1 day')`, p, pub, class)
	}
	exec(db.Pool, `UPDATE campaign_quotas SET entries = entries + 1 WHERE id = $1`, q1)
	exec(db.Pool, `INSERT INTO campaign_daily_counts (campaign_id, day, outcomes, completes) VALUES ($1, current_date, 1, 1)`, c1)
	block(db.Pool, p1, "fraud")
	block(db.Pool, p3, "fraud")

	open, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx)
	exec(open, `UPDATE campaign_quotas SET completes = completes + 1 WHERE id = $1`, q2)
	block(open, p2, "speeder")
	pos, err := db.Feed.ChangePosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	exec(db.Pool, `INSERT INTO campaign_daily_counts (campaign_id, day, outcomes, completes) VALUES ($1, current_date, 2, 0)`, c3)
	exec(db.Pool, `UPDATE campaign_quotas SET in_progress = in_progress + 1 WHERE id = $1`, q4)
	exec(db.Pool, `UPDATE quality_blocks SET unblocked_at = now() WHERE participant_id = $1`, p3)

	daily, quotas, err := db.Feed.CountsChangedAt(ctx, pos.XID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(daily, []int64{c3}) || !slices.Equal(quotas, []int64{c2, c4}) {
		t.Fatalf("counts changed at the position: daily %v, quotas %v; want [%d], [%d %d]", daily, quotas, c3, c2, c4)
	}
	blocks, err := db.Quality.QualityBlocksChangedAt(ctx, pos.XID)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].ParticipantID != p2 || blocks[0].RuleClass != "speeder" ||
		blocks[1].ParticipantID != p3 || blocks[1].UnblockedAt == nil {
		t.Fatalf("blocks changed at the position: %+v; want %d's speeder block and %d's lifted one", blocks, p2, p3)
	}
	// A position after every write names nothing.
	now, err := db.Feed.ChangePosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if daily, quotas, err := db.Feed.CountsChangedAt(ctx, now.XID); err != nil || len(daily)+len(quotas) != 0 {
		t.Fatalf("after every write: %v %v %v", daily, quotas, err)
	}
	if blocks, err := db.Quality.QualityBlocksChangedAt(ctx, now.XID); err != nil || len(blocks) != 0 {
		t.Fatalf("after every write: %+v %v", blocks, err)
	}
}
