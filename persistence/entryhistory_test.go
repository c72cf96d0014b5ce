package persistence_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestLoadPanelEntryHistory: the start-up load hands over the entries that can still block
// an offer (docs/rules.md §4, §5.5), each as ParticipantByID reads it, and leaves out old
// entries into archived or reconciled campaigns nothing open is related to. Once such a
// campaign becomes related to an open one, HistoryCampaigns names it and LoadEntriesOf
// reads its entries.
func TestLoadPanelEntryHistory(t *testing.T) {
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, _, err := db.Accounts.CreateBuyer(ctx, "history@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	var pub int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO publishers (name, currency_name, exchange_rate, revenue_share,
		redirect_url, api_secret, environment, token_hash)
		VALUES ('p', 'points', 1, 0.5, 'https://p.example/r', 's', 'live', '\x01') RETURNING id`).Scan(&pub)
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
		VALUES ($1, 'u1', (SELECT min(id) FROM countries), '{}') RETURNING id`, pub).Scan(&pid)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-90 * 24 * time.Hour).Truncate(time.Second).Add(700 * time.Millisecond) // rounds up
	recent := time.Now().Add(-3 * 24 * time.Hour).Truncate(time.Second)
	type camp struct {
		name    string
		status  int
		entered time.Time
		loaded  bool // at start-up
	}
	camps := []camp{
		{"active", 2, old, true},
		{"complete (may be reopened)", 3, old, true},
		{"paused", 5, old, true},
		{"system paused", 7, old, true},
		{"archived, related to active", 4, old, true},
		{"reconciled, related to paused", 6, old, true},
		{"archived, nothing related", 4, old, false},
		{"reconciled, nothing related", 6, old, false},
		{"archived, related to archived only", 4, old, false},
		{"archived, entered within the activity window", 4, recent, true},
	}
	ids := make([]int64, len(camps))
	for i, c := range camps {
		ids[i] = newCampaign(t, db, b.ID, c.name)
	}
	relate := func(a, c int64) {
		t.Helper()
		if _, err := db.Campaigns.CreateRelationship(ctx, b.ID, a, c); err != nil {
			t.Fatal(err)
		}
	}
	relate(ids[0], ids[4])
	relate(ids[5], ids[2]) // either direction
	other := newCampaign(t, db, b.ID, "archived partner")
	relate(ids[8], other)
	for i, c := range camps {
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = $2 WHERE id = $1`, ids[i], c.status); err != nil {
			t.Fatal(err)
		}
		// Two entries (the later counts) and a test one, which never does.
		if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, entered_at, is_test)
			VALUES (md5(random()::text), $1, $2, $3, $4::timestamptz - interval '1 day', false), (md5(random()::text), $1, $2, $3, $4::timestamptz, false),
			(md5(random()::text), $1, $2, $3, $4::timestamptz + interval '1 hour', true)`, ids[i], b.ID, pid, c.entered); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 4 WHERE id = $1`, other); err != nil {
		t.Fatal(err)
	}
	stored, err := db.Participants.ParticipantByID(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	storedAt := map[int64]int64{}
	for _, e := range stored.Entries {
		storedAt[e.CampaignID] = e.At
	}

	// An inactive participant's entries: not read when the load reads participant by
	// participant, ignored by the panel (which does not hold the participant) otherwise.
	var inactive int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile, last_active_at)
		VALUES ($1, 'u2', (SELECT min(id) FROM countries), '{}', now() - interval '90 days') RETURNING id`, pub).Scan(&inactive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, entered_at)
		VALUES (md5(random()::text), $1, $2, $3, now())`, ids[0], b.ID, inactive); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, got map[int64]int64, st persistence.EntryHistoryStats) {
		t.Helper()
		var wantLeftOut []int64
		for i, c := range camps {
			at, ok := got[ids[i]]
			switch {
			case ok != c.loaded:
				t.Errorf("%s: loaded %v, want %v", c.name, ok, c.loaded)
			case ok && at != storedAt[ids[i]]:
				t.Errorf("%s: entry at %d, ParticipantByID reads %d", c.name, at, storedAt[ids[i]])
			}
			if c.status == 4 || c.status == 6 {
				if !(c.name == "archived, related to active" || c.name == "reconciled, related to paused") {
					wantLeftOut = append(wantLeftOut, ids[i])
				}
			}
		}
		if at := got[ids[0]]; at != old.Unix()+1 {
			t.Errorf("entry at %d, want %d (the later entry, rounded)", at, old.Unix()+1)
		}
		wantLeftOut = append(wantLeftOut, other)
		slices.Sort(wantLeftOut)
		leftOut := slices.Sorted(slices.Values(st.LeftOut))
		if !slices.Equal(leftOut, wantLeftOut) {
			t.Errorf("left out %v, want %v", leftOut, wantLeftOut)
		}
		if st.Campaigns != len(ids)+1-len(wantLeftOut) {
			t.Errorf("history of %d campaigns, want %d", st.Campaigns, len(ids)+1-len(wantLeftOut))
		}
	}
	var st persistence.EntryHistoryStats
	got := map[int64]int64{} // the latest entry per campaign, as Panel.RecordEntry keeps it
	// Every session that matters, in one range of ids and in ranges of two; participant by
	// participant.
	for _, load := range []struct{ few, chunk int64 }{{0, 1 << 16}, {0, 2}, {1, 1 << 16}} {
		few := load.few
		clear(got)
		restoreChunk := persistence.SetHistoryChunk(load.chunk)
		restore := persistence.SetFewParticipants(few)
		st, err = db.Participants.LoadPanel(ctx, time.Now().Add(-24*time.Hour), func(persistence.PanelParticipant) error { return nil },
			func(participant, campaign, at int64) {
				switch {
				case participant == inactive && few == 0:
				case participant != pid:
					t.Errorf("few=%d: entry of participant %d", few, participant)
				default:
					got[campaign] = max(got[campaign], at)
				}
			})
		restore()
		restoreChunk()
		if err != nil {
			t.Fatal(err)
		}
		if want := 2*len(camps) + 1 - 2*3; few == 0 && st.Rows != int64(want) {
			t.Errorf("chunk %d: %d rows read, want %d", load.chunk, st.Rows, want)
		}
		check(t, got, st)
	}
	// A relationship created later: the archived campaign it names matters again.
	relate(ids[7], ids[1])
	need, err := db.Participants.HistoryCampaigns(ctx, st.LeftOut)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(need, []int64{ids[7]}) {
		t.Fatalf("HistoryCampaigns = %v, want [%d]", need, ids[7])
	}
	late := map[int64]int64{}
	n, err := db.Participants.LoadEntriesOf(ctx, need, func(participant, campaign, at int64) {
		late[campaign] = max(late[campaign], at)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int64]int64{ids[7]: storedAt[ids[7]]}; n != 2 || !maps.Equal(late, want) {
		t.Errorf("LoadEntriesOf: %d rows, %v; want 2 rows, %v", n, late, want)
	}
}

// TestEntryHistoryCustomPlans: the entry history, read in many ranges of ids, is planned for
// each range's values: a generic plan tests each session against the campaign list one
// element at a time instead of hashing it (15 s instead of 40 ms per range at 100,000
// campaigns).
func TestEntryHistoryCustomPlans(t *testing.T) {
	ctx := context.Background()
	db, err := persistence.Open(ctx, oneConnection(pgtest.URL(t)), nil) // every range on one connection
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	buyer := newBuyer(t, db, "plans@example.test")
	var camps []int64
	for i := range 3 {
		camps = append(camps, newCampaign(t, db, buyer, fmt.Sprintf("history %d", i)))
	}
	// One closed: the load names a list of campaigns.
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = CASE WHEN id = $1 THEN 4 ELSE 2 END WHERE id = ANY($2)`,
		camps[0], camps); err != nil {
		t.Fatal(err)
	}
	p, err := db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: newPublisher(t, db), User: "history-user", CountryID: 1},
		"test", func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, entered_at)
		SELECT 'h' || g, ($1::bigint[])[1 + g % 3], $2, $3, now() - interval '30 days' FROM generate_series(1, 40) g`,
		camps, buyer, p.ID); err != nil {
		t.Fatal(err)
	}
	defer persistence.SetHistoryChunk(2)()
	defer persistence.SetFewParticipants(0)()
	if _, err := db.Participants.LoadPanel(ctx, time.Now().Add(-24*time.Hour), func(persistence.PanelParticipant) error { return nil },
		func(int64, int64, int64) {}); err != nil {
		t.Fatal(err)
	}
	var generic, custom int64
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0) FROM pg_prepared_statements
		WHERE statement LIKE 'SELECT participant_id, campaign_id, entered_at FROM sessions%'`).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if generic != 0 || custom < 10 {
		t.Errorf("the history's ranges ran %d generic and %d custom plans, want custom plans only", generic, custom)
	}
}
