package supply_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestEntryHistoryAfterRestart: a process started beside a running one loads only the
// entries that can still block an offer, and blocks exactly as the first one: a respondent
// who entered an archived campaign related to an open one, or an open campaign that allows
// no reentry, is not offered it (docs/rules.md §5.5). An old entry into an archived
// campaign nothing is related to stays out of the panel until a relationship to it is
// created; from then on it blocks too.
func TestEntryHistoryAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	s1 := apptest.Start(t, apptest.Options{DatabaseURL: url})
	p := newPartner(t, s1)
	m := newMarket(t, s1)
	quota := []quotaSpec{{Num: 100, Quals: []qualSpec{{Q: 45, Texts: []string{"H0001"}}}}}
	live := m.create(campaignSpec{Quotas: quota})
	archivedRelated := m.create(campaignSpec{Status: 4, Quotas: quota})
	archivedAlone := m.create(campaignSpec{Status: 4, Quotas: quota})
	never := m.create(campaignSpec{Quotas: quota}) // null reentry_interval
	later := m.create(campaignSpec{Quotas: quota})
	if _, err := s1.DB.Campaigns.CreateRelationship(ctx, m.buyerID, live, archivedRelated); err != nil {
		t.Fatal(err)
	}
	person := func() (string, int64) {
		u := newUser()
		p.impanel(t, u, 1, answer(42, 30), answer(43, 1), answer(45, "H0001"))
		pp, ok := s1.App.Panel.Get(p.ID, u)
		if !ok {
			t.Fatal("not in panel")
		}
		return u, pp.ID
	}
	entered, enteredID := person()
	fresh, _ := person()
	old := time.Now().Add(-60 * 24 * time.Hour) // outside the activity window
	for _, c := range []int64{archivedRelated, archivedAlone, never} {
		if _, err := s1.DB.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, participant_id, entered_at)
			VALUES (md5(random()::text), $1, $2, $3, $4)`, c, m.buyerID, enteredID, old); err != nil {
			t.Fatal(err)
		}
	}

	s2 := apptest.Start(t, apptest.Options{DatabaseURL: url})
	<-s2.App.Supply.Loaded()
	p2 := p.on(t, s2)
	for _, id := range []int64{live, never, later} {
		waitEngine(t, s2, id, true)
	}
	history := func() []int64 {
		pp, ok := s2.App.Panel.Get(p.ID, entered)
		if !ok {
			t.Fatal("not in the second process's panel")
		}
		var ids []int64
		for _, e := range pp.Entries {
			ids = append(ids, e.CampaignID)
		}
		return ids
	}
	if got, want := history(), []int64{archivedRelated, never}; !slices.Equal(got, want) {
		t.Fatalf("entry history after restart %v, want %v", got, want)
	}
	sees := func(user string, id int64, want bool) {
		t.Helper()
		if o := p2.campaigns(t, user, "", 1); o.has(id) != want {
			t.Fatalf("user %s: campaign %d offered=%v, want %v (got %v)", user, id, !want, want, o.ids())
		}
	}
	sees(entered, live, false)
	sees(entered, never, false)
	sees(entered, later, true)
	sees(fresh, live, true)
	sees(fresh, never, true)

	// The relationship notifies both campaigns: the second process loads the archived
	// campaign's entries, and the respondent is no longer offered the open one.
	if _, err := s1.DB.Campaigns.CreateRelationship(ctx, m.buyerID, later, archivedAlone); err != nil {
		t.Fatal(err)
	}
	eventually(t, "late relationship blocks", func() bool {
		c, _ := s2.App.Engine.Snapshot().Campaign(later)
		return c != nil && slices.Contains(c.Related, archivedAlone) && !p2.campaigns(t, entered, "", 1).has(later)
	})
	if got := history(); !slices.Contains(got, archivedAlone) {
		t.Fatalf("entry history %v lacks the newly related campaign %d", got, archivedAlone)
	}
	sees(fresh, later, true)
}
