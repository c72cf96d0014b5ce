package persistence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestAdmitOneParticipantOnTwoProcesses: entries of one participant decided at the same
// moment by two processes (two pools on one database) still obey the participant's rules:
// into a campaign that admits nobody twice, and into two related campaigns, exactly one of
// each pair gets in. Quota rows do not order these entries (related campaigns share none),
// so without the admission's participant locks both read the other's absence.
func TestAdmitOneParticipantOnTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	var dbs [2]*persistence.DB
	for i := range dbs {
		db, err := persistence.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		dbs[i] = db
	}
	db := dbs[0]
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "race@example.test", "Race", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublisher(t, db)
	// campaign creates an active campaign with one large quota; reentry_interval is null:
	// nobody enters it twice.
	campaign := func(name string) (id, quota int64) {
		t.Helper()
		id = newCampaign(t, db, buyer.ID, name)
		num := 100_000
		q, err := db.Campaigns.CreateQuota(ctx, buyer.ID, id, persistence.QuotaFields{NumRespondents: &num,
			Qualifications: []persistence.QualificationInput{{QuestionID: 43, PreCodes: []persistence.PreCode{{Text: "1", Number: true}, {Text: "2", Number: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, reentry_interval = NULL WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		return id, q.ID
	}
	once, onceQuota := campaign("Once")
	left, leftQuota := campaign("Left")
	right, rightQuota := campaign("Right")
	if _, err := db.Campaigns.CreateRelationship(ctx, buyer.ID, left, right); err != nil {
		t.Fatal(err)
	}

	const pairs = 120
	participants := func(prefix string) []int64 {
		t.Helper()
		ids := make([]int64, pairs)
		for i := range ids {
			p, err := db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub, User: fmt.Sprintf("%s-%d", prefix, i), CountryID: 1,
				Profile: []persistence.ProfileAnswer{{QuestionID: 43, Codes: []int32{1}}}}, "test", func() error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = p.ID
		}
		return ids
	}
	// race sends each participant's two entries at once, one through each process, and
	// returns how many pairs got both in and how many got neither.
	race := func(ps []int64, camps [2]int64, quotas [2]int64) (both, neither int) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i, p := range ps {
			sem <- struct{}{}
			start := make(chan struct{})
			var admitted [2]bool
			var pairWG sync.WaitGroup
			for k := range 2 {
				pairWG.Add(1)
				go func() {
					defer pairWG.Done()
					<-start
					tid := fmt.Sprintf("%d-%d-%d", camps[k], i, k)
					a, err := dbs[k].Sessions.Admit(ctx, persistence.Entry{TID: tid, CampaignID: camps[k], PublisherID: pub,
						ParticipantID: p, QuotaIDs: []int64{quotas[k]}, RespondentID: fmt.Sprintf("R%dx%dx%d", camps[k], i, k)})
					if err != nil {
						t.Error(err)
						return
					}
					admitted[k] = a.Refused == ""
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				close(start)
				pairWG.Wait()
				mu.Lock()
				switch {
				case admitted[0] && admitted[1]:
					both++
				case !admitted[0] && !admitted[1]:
					neither++
				}
				mu.Unlock()
				<-sem
			}()
		}
		wg.Wait()
		return both, neither
	}

	began := time.Now()
	both, neither := race(participants("once"), [2]int64{once, once}, [2]int64{onceQuota, onceQuota})
	t.Logf("same campaign, no reentry: %d pairs, both admitted %d, neither %d", pairs, both, neither)
	if both != 0 || neither != 0 {
		t.Errorf("same campaign: %d of %d participants entered twice, %d not at all", both, pairs, neither)
	}
	both, neither = race(participants("related"), [2]int64{left, right}, [2]int64{leftQuota, rightQuota})
	t.Logf("related campaigns: %d pairs, both admitted %d, neither %d (%v)", pairs, both, neither, time.Since(began).Round(time.Millisecond))
	if both != 0 || neither != 0 {
		t.Errorf("related campaigns: %d of %d participants entered both, %d neither", both, pairs, neither)
	}
	var sessions int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE campaign_id = ANY($1)`, []int64{once, left, right}).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if sessions != 2*pairs {
		t.Errorf("%d sessions stored, want %d", sessions, 2*pairs)
	}
}
