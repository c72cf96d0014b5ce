package supply_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/engine"
)

// TestMatchingRules checks each rule of docs/rules.md §5 through real HTTP, each with a case that
// is offered and one that is not. Campaigns are written with SQL and announced with NOTIFY;
// each case targets its own ZIP code so that cases do not see each other's campaigns.
func TestMatchingRules(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	m := newMarket(t, s)
	ctx := context.Background()
	zipSeq := 0
	nextZip := func() string { zipSeq++; return fmt.Sprintf("Z%04d", zipSeq) }
	zipQuota := func(zip string, more ...qualSpec) []quotaSpec {
		return []quotaSpec{{Num: 100, Quals: append([]qualSpec{{Q: 45, Texts: []string{zip}}}, more...)}}
	}
	person := func(country int, zip string, more ...map[string]any) (string, int64) {
		u := newUser()
		p.impanel(t, u, country, append([]map[string]any{answer(42, 30), answer(43, 1), answer(45, zip)}, more...)...)
		pp, ok := s.App.Panel.Get(p.ID, u)
		if !ok {
			t.Fatal("not in panel")
		}
		return u, pp.ID
	}
	ready := func(ids ...int64) {
		for _, id := range ids {
			waitEngine(t, s, id, true)
		}
	}
	sees := func(t *testing.T, user, device string, deviceType int, id int64, want bool) {
		t.Helper()
		o := p.campaigns(t, user, device, deviceType)
		if o.has(id) != want {
			t.Fatalf("user %s device %q/%d: campaign %d offered=%v, want %v (got %v)", user, device, deviceType, id, !want, want, o.ids())
		}
	}
	quotaIDs := func(campaign int64) []int64 {
		rows, err := s.DB.Pool.Query(ctx, `SELECT id FROM campaign_quotas WHERE campaign_id=$1 ORDER BY id`, campaign)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}

	t.Run("1 active and same country", func(t *testing.T) {
		zip := nextZip()
		active := m.create(campaignSpec{Quotas: zipQuota(zip)})
		spanish := m.create(campaignSpec{CountryLanguage: 2, Quotas: zipQuota(zip)}) // es-US is still the US
		paused := m.create(campaignSpec{Status: 5, Quotas: zipQuota(zip)})
		britain := m.create(campaignSpec{CountryLanguage: 3, Quotas: zipQuota(zip)})
		ready(active, spanish, britain)
		us, _ := person(1, zip)
		gb, _ := person(2, zip)
		sees(t, us, "", 1, active, true)
		sees(t, us, "", 1, spanish, true)
		sees(t, us, "", 1, paused, false)
		sees(t, us, "", 1, britain, false)
		sees(t, gb, "", 1, britain, true)
		sees(t, gb, "", 1, active, false)
	})

	t.Run("2 device", func(t *testing.T) {
		zip := nextZip()
		mobile := m.create(campaignSpec{Devices: []int{1}, Quotas: zipQuota(zip)})
		tablet := m.create(campaignSpec{Devices: []int{0}, Quotas: zipQuota(zip)})
		any := m.create(campaignSpec{Quotas: zipQuota(zip)})
		ready(mobile, tablet, any)
		u, _ := person(1, zip)
		sees(t, u, "", 1, mobile, true)
		sees(t, u, "", 2, mobile, false)
		sees(t, u, "", 3, tablet, true)
		sees(t, u, "", 1, tablet, false)
		sees(t, u, "", 2, any, true)
	})

	t.Run("3 open quota and no full global quota", func(t *testing.T) {
		zip := nextZip()
		open := m.create(campaignSpec{Quotas: zipQuota(zip)})
		full := m.create(campaignSpec{Quotas: []quotaSpec{{Num: 5, Quals: []qualSpec{{Q: 45, Texts: []string{zip}}}}}})
		globalFull := m.create(campaignSpec{Quotas: append(zipQuota(zip), quotaSpec{Num: 3, Global: true})})
		globalOpen := m.create(campaignSpec{Quotas: append(zipQuota(zip), quotaSpec{Num: 3, Global: true})})
		onlyGlobal := m.create(campaignSpec{Quotas: []quotaSpec{{Num: 100, Global: true, Quals: []qualSpec{{Q: 45, Texts: []string{zip}}}}}})
		ready(open, full, globalFull, globalOpen, onlyGlobal)
		// Sessions in progress count too: 2 completes + 1 in progress fill a quota of 3.
		inProg := m.create(campaignSpec{Quotas: []quotaSpec{{Num: 3, Quals: []qualSpec{{Q: 45, Texts: []string{zip}}}}}})
		ready(inProg)
		// The counts are written where the product keeps them (the database) and reach the
		// engine through the counters' notification, as another process's would: a count
		// set only in memory would be undone by the router's next reconciliation.
		counts := []struct {
			campaign, quota int64
			want            engine.QuotaCounts
		}{
			{full, quotaIDs(full)[0], engine.QuotaCounts{Completes: 5}},
			{globalFull, quotaIDs(globalFull)[1], engine.QuotaCounts{Completes: 3}},
			{inProg, quotaIDs(inProg)[0], engine.QuotaCounts{Completes: 2, InProgress: 1}},
		}
		var notify []int64
		for _, c := range counts {
			if _, err := s.DB.Pool.Exec(ctx, `UPDATE campaign_quotas SET completes=$2, in_progress=$3 WHERE id=$1`,
				c.quota, c.want.Completes, c.want.InProgress); err != nil {
				t.Fatal(err)
			}
			notify = append(notify, c.campaign)
		}
		if err := s.DB.Feed.NotifyCounts(ctx, notify); err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			eventually(t, fmt.Sprintf("quota %d counts %+v", c.quota, c.want), func() bool {
				return s.App.Engine.Counters().Quota(c.quota) == c.want
			})
		}
		u, _ := person(1, zip)
		sees(t, u, "", 1, open, true)
		sees(t, u, "", 1, globalOpen, true)
		sees(t, u, "", 1, full, false)
		sees(t, u, "", 1, globalFull, false)
		sees(t, u, "", 1, inProg, false)
		sees(t, u, "", 1, onlyGlobal, false) // no non-global quota to match
	})

	t.Run("4 qualifications", func(t *testing.T) {
		zip := nextZip()
		women := m.create(campaignSpec{Quotas: zipQuota(zip, qualSpec{Q: 43, Codes: []int{2}})})
		thirties := m.create(campaignSpec{Quotas: zipQuota(zip, qualSpec{Q: 42, Codes: []int{30, 31, 32}})})
		income := m.create(campaignSpec{Quotas: zipQuota(zip, qualSpec{Q: 101, Codes: []int{3, 4}})})
		twoQuotas := m.create(campaignSpec{Quotas: []quotaSpec{
			{Num: 10, Quals: []qualSpec{{Q: 45, Texts: []string{zip}}, {Q: 43, Codes: []int{2}}}},
			{Num: 10, Quals: []qualSpec{{Q: 45, Texts: []string{zip}}, {Q: 42, Codes: []int{30}}}},
		}})
		gbZip := "SW1A1AA"
		postcode := m.create(campaignSpec{CountryLanguage: 3, Quotas: []quotaSpec{{Num: 10, Quals: []qualSpec{{Q: 45, Texts: []string{gbZip, "EC1A1BB"}}}}}})
		ready(women, thirties, income, twoQuotas, postcode)
		man30, _ := person(1, zip)
		u := newUser()
		p.impanel(t, u, 1, answer(42, "41"), answer(43, 2), answer(45, zip), answer(101, 4))
		sees(t, man30, "", 1, women, false)
		sees(t, u, "", 1, women, true)
		sees(t, man30, "", 1, thirties, true)
		sees(t, u, "", 1, thirties, false)
		sees(t, man30, "", 1, income, false) // unanswered does not match
		sees(t, u, "", 1, income, true)
		sees(t, man30, "", 1, twoQuotas, true) // via the second quota
		sees(t, u, "", 1, twoQuotas, true)     // via the first
		gb, _ := person(2, " sw1a 1aa ")
		sees(t, gb, "", 1, postcode, true)
		gb2, _ := person(2, "SW1A 2AA")
		sees(t, gb2, "", 1, postcode, false)
	})

	t.Run("5 exclusions, relationships, reentry", func(t *testing.T) {
		zip := nextZip()
		excl := m.create(campaignSpec{Quotas: zipQuota(zip)})
		relA := m.create(campaignSpec{Quotas: zipQuota(zip)})
		relB := m.create(campaignSpec{Quotas: zipQuota(zip)})
		never := m.create(campaignSpec{Quotas: zipQuota(zip)})
		hour := 60
		zero := 0
		hourly := m.create(campaignSpec{Reentry: &hour, Quotas: zipQuota(zip)})
		unlimited := m.create(campaignSpec{Reentry: &zero, Quotas: zipQuota(zip)})
		ready(excl, relA, relB, never, hourly, unlimited)
		out, outID := person(1, zip)
		in, _ := person(1, zip)
		m.exec(excl, `INSERT INTO campaign_exclusions (campaign_id, participant_id) VALUES ($1,$2)`, excl, outID)
		var ok bool
		if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO campaign_relationships (buyer_id, campaign_id, related_campaign_id) VALUES ($1,$2,$3)`, m.buyerID, relA, relB); err != nil {
			t.Fatal(err)
		}
		m.announce(relA)
		m.announce(relB)
		eventually(t, "exclusion and relationship indexed", func() bool {
			c, _ := s.App.Engine.Snapshot().Campaign(excl)
			a, _ := s.App.Engine.Snapshot().Campaign(relB)
			ok = c != nil && len(c.ExcludedParticipants) == 1 && a != nil && len(a.Related) == 1
			return ok
		})
		sees(t, out, "", 1, excl, false)
		sees(t, in, "", 1, excl, true)

		// Both related campaigns are offered until the respondent enters one of them.
		entered, enteredID := person(1, zip)
		sees(t, entered, "", 1, relA, true)
		sees(t, entered, "", 1, relB, true)
		now := time.Now().Unix()
		s.App.Panel.RecordEntry(enteredID, relA, now-7200)
		sees(t, entered, "", 1, relB, false)
		sees(t, entered, "", 1, relA, false) // null reentry_interval: never twice
		sees(t, in, "", 1, relB, true)

		s.App.Panel.RecordEntry(enteredID, never, now-30*86400)
		sees(t, entered, "", 1, never, false)
		s.App.Panel.RecordEntry(enteredID, hourly, now-7200)
		sees(t, entered, "", 1, hourly, true) // 2 h > 60 min
		s.App.Panel.RecordEntry(enteredID, hourly, now-600)
		sees(t, entered, "", 1, hourly, false) // 10 min < 60 min
		s.App.Panel.RecordEntry(enteredID, unlimited, now-1)
		sees(t, entered, "", 1, unlimited, true)
	})

	t.Run("6 retargeting", func(t *testing.T) {
		zip := nextZip()
		byID := m.create(campaignSpec{Quotas: zipQuota(zip)})
		byDevice := m.create(campaignSpec{Quotas: zipQuota(zip)})
		byHash := m.create(campaignSpec{Quotas: zipQuota(zip)})
		expired := m.create(campaignSpec{Quotas: zipQuota(zip)})
		ready(byID, byDevice, byHash, expired)
		listed, listedID := person(1, zip)
		other, _ := person(1, zip)
		maid := "aebe52e7-03ee-455a-b3c4-e57283966239"
		soon := time.Now().Add(24 * time.Hour)
		m.exec(byID, `INSERT INTO campaign_retargets (campaign_id, retargeting_type, identifier, participant_id, expires_at) VALUES ($1,1,'r1',$2,$3)`, byID, listedID, soon)
		m.exec(byDevice, `INSERT INTO campaign_retargets (campaign_id, retargeting_type, identifier, expires_at) VALUES ($1,2,$2,$3)`, byDevice, maid, soon)
		m.exec(byHash, `INSERT INTO campaign_retargets (campaign_id, retargeting_type, identifier, expires_at) VALUES ($1,3,$2,$3)`, byHash, engine.HashDeviceID(maid), soon)
		m.exec(expired, `INSERT INTO campaign_retargets (campaign_id, retargeting_type, identifier, participant_id, expires_at) VALUES ($1,1,'r2',$2,$3)`, expired, listedID, time.Now().Add(-time.Hour))
		eventually(t, "retargets indexed", func() bool {
			ok := true
			for _, id := range []int64{byID, byDevice, byHash} {
				c, _ := s.App.Engine.Snapshot().Campaign(id)
				ok = ok && c != nil && len(c.Retargets) == 1
			}
			return ok
		})
		sees(t, listed, "", 1, byID, true)
		sees(t, other, "", 1, byID, false)
		sees(t, other, maid, 1, byDevice, true)
		sees(t, other, "other-device", 1, byDevice, false)
		sees(t, other, "", 1, byDevice, false)
		sees(t, other, strings.ToUpper(maid), 1, byHash, true) // hashed upper-cased
		sees(t, other, maid, 1, byHash, true)
		sees(t, other, "other-device", 1, byHash, false)
		sees(t, other, "", 1, expired, true)
	})

	t.Run("7 daily cap", func(t *testing.T) {
		zip := nextZip()
		three := 3
		capped := m.create(campaignSpec{MaxDaily: &three, Quotas: zipQuota(zip)})
		below := m.create(campaignSpec{MaxDaily: &three, Quotas: zipQuota(zip)})
		ready(capped, below)
		day := time.Now().Unix() / 86400
		s.App.Engine.Counters().SetCampaign(capped, engine.CampaignCounts{Day: day, DayCompletes: 3})
		s.App.Engine.Counters().SetCampaign(below, engine.CampaignCounts{Day: day, DayCompletes: 2})
		u, _ := person(1, zip)
		sees(t, u, "", 1, capped, false)
		sees(t, u, "", 1, below, true)
		// Yesterday's completes do not count today.
		yesterday := m.create(campaignSpec{MaxDaily: &three, Quotas: zipQuota(zip)})
		ready(yesterday)
		s.App.Engine.Counters().SetCampaign(yesterday, engine.CampaignCounts{Day: day - 1, DayCompletes: 3})
		u2, _ := person(1, zip)
		sees(t, u2, "", 1, yesterday, true)
	})

	t.Run("country not served and no surveys", func(t *testing.T) {
		u, _ := person(6, "2000")
		o := p.campaigns(t, u, "", 1)
		if len(o.Surveys) != 0 || o.Eligibility.IsEligible || o.Eligibility.Reason != 2 {
			t.Fatalf("%+v", o)
		}
	})
}

// TestHotReloadAcrossProcesses runs two servers on one database: an impanel on one reaches
// the other's panel, and a buyer change announced on the database reaches the other's
// GET /campaigns within a second.
func TestHotReloadAcrossProcesses(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	dbURL := a.DB.Pool.Config().ConnString()
	b := apptest.Start(t, apptest.Options{DatabaseURL: dbURL})
	pa := newPartner(t, a)
	pb := pa.on(t, b)
	m := newMarket(t, a)

	zip := "H0001"
	id := m.create(campaignSpec{Quotas: []quotaSpec{{Num: 100, Quals: []qualSpec{{Q: 45, Texts: []string{zip}}, {Q: 43, Codes: []int{1}}}}}})
	waitEngine(t, a, id, true)
	waitEngine(t, b, id, true)

	u := newUser()
	pa.impanel(t, u, 1, usProfile(30, 1, zip)...)
	took := eventually(t, "participant on the other process", func() bool {
		_, ok := b.App.Panel.Get(pa.ID, u)
		return ok
	})
	t.Logf("impanel on A reached B's panel in %v", took)
	if o := pb.campaigns(t, u, "", 1); !o.has(id) {
		t.Fatalf("B does not offer %d: %v", id, o.ids())
	}
	// The quota now wants women only: B must stop offering it within 1 s (its cached answer
	// for this user included).
	var qid int64
	if err := a.DB.Pool.QueryRow(context.Background(), `SELECT id FROM campaign_quotas WHERE campaign_id=$1`, id).Scan(&qid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m.exec(id, `UPDATE quota_qualifications SET pre_codes='{2}' WHERE quota_id=$1 AND question_id=43`, qid)
	for pb.campaigns(t, u, "", 1).has(id) {
		if time.Since(start) > time.Second {
			t.Fatalf("quota change not visible on B after %v", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("quota change visible on B after %v", time.Since(start))

	// And back, by an impanel on B: the participant becomes a woman on A too.
	pb.impanel(t, u, 1, answer(43, 2))
	start = time.Now()
	for !pa.campaigns(t, u, "", 1).has(id) {
		if time.Since(start) > time.Second {
			t.Fatalf("impanel on B not visible on A after %v", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("impanel on B visible in A's offers after %v", time.Since(start))
}
