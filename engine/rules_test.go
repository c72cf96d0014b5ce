package engine_test

import (
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// One positive and one negative case per rule of docs/rules.md §5, each checked
// through Match and Eligible.

const ruleNow int64 = 1_700_000_000/86400*86400 + 43200 // noon UTC

func baseCampaign() engine.Campaign {
	return engine.Campaign{
		ID: 10, BuyerID: 1, CountryID: 1, Status: engine.StatusActive, CPICents: 200, LOI: 10, Incidence: 50,
		ReentryMinutes: engine.ReentryNever,
		Quotas: []engine.Quota{{ID: 100, NumRespondents: 10, Conditions: []engine.Condition{
			{QuestionID: engine.QuestionGender, Codes: []int32{2}},
			{QuestionID: engine.QuestionAge, Codes: []int32{30, 31, 32}},
		}}},
	}
}

func baseParticipant() engine.Participant {
	return engine.Participant{
		ID: 7, CountryID: 1, PublisherID: 4, Device: engine.DeviceMobile, DeviceID: "abc-123",
		DeviceIDHash: engine.HashDeviceID("abc-123"),
		Answers: []engine.Answer{
			{QuestionID: engine.QuestionAge, Codes: []int32{31}},
			{QuestionID: engine.QuestionGender, Codes: []int32{2}},
			{QuestionID: engine.QuestionZip, Text: "SW1A1AA"},
			{QuestionID: 50, Codes: []int32{1, 3}},
		},
	}
}

type ruleCase struct {
	name     string
	campaign func(c *engine.Campaign)
	person   func(p *engine.Participant)
	counts   func(ctr *engine.Counters)
	want     bool
}

func runRule(t *testing.T, tc ruleCase) {
	t.Helper()
	c := baseCampaign()
	p := baseParticipant()
	if tc.campaign != nil {
		tc.campaign(&c)
	}
	if tc.person != nil {
		tc.person(&p)
	}
	e := engine.New(nil)
	if tc.counts != nil {
		tc.counts(e.Counters())
	}
	cs := []engine.Campaign{c}
	e.Load(cs)
	offers := e.Match(&p, 0.5, ruleNow, 10, nil)
	if got := len(offers) == 1; got != tc.want {
		t.Errorf("Match: offered=%v, want %v (offers %v)", got, tc.want, offers)
	}
	if _, ok := e.Eligible(&p, c.ID, ruleNow, nil); ok != tc.want {
		t.Errorf("Eligible = %v, want %v", ok, tc.want)
	}
	if ref := refCampaign(&cs[0], e.Counters(), &p, ruleNow).ok; ref != tc.want {
		t.Errorf("reference = %v, want %v (the case itself is wrong)", ref, tc.want)
	}
}

func TestRules(t *testing.T) {
	setQuota := func(id int64, v engine.QuotaCounts) func(*engine.Counters) {
		return func(ctr *engine.Counters) { ctr.SetQuota(id, v) }
	}
	cases := []ruleCase{
		{name: "1 base case is offered", want: true},
		{name: "1 paused campaign", campaign: func(c *engine.Campaign) { c.Status = 5 }},
		{name: "1 other country", person: func(p *engine.Participant) { p.CountryID = 2 }},

		{name: "2 device supported", campaign: func(c *engine.Campaign) { c.Devices = engine.DeviceMobile | engine.DeviceTablet }, want: true},
		{name: "2 device not supported", campaign: func(c *engine.Campaign) { c.Devices = engine.DeviceDesktop }},
		{name: "2 empty devices mean all", campaign: func(c *engine.Campaign) { c.Devices = 0 }, person: func(p *engine.Participant) { p.Device = engine.DeviceTablet }, want: true},

		{name: "3 open quota", counts: setQuota(100, engine.QuotaCounts{Completes: 9}), want: true},
		{name: "3 quota full by completes", counts: setQuota(100, engine.QuotaCounts{Completes: 10})},
		{name: "3 quota full with sessions in progress", counts: setQuota(100, engine.QuotaCounts{Completes: 8, InProgress: 2})},
		{name: "3 click-balanced counts entries", campaign: func(c *engine.Campaign) { c.Quotas[0].ClickBalanced = true },
			counts: setQuota(100, engine.QuotaCounts{Completes: 10, Entries: 9}), want: true},
		{name: "3 click-balanced full by entries", campaign: func(c *engine.Campaign) { c.Quotas[0].ClickBalanced = true },
			counts: setQuota(100, engine.QuotaCounts{Entries: 10})},
		{name: "3 one of two quotas open", campaign: func(c *engine.Campaign) {
			c.Quotas = append(c.Quotas, engine.Quota{ID: 101, NumRespondents: 5})
		}, counts: setQuota(100, engine.QuotaCounts{Completes: 10}), want: true},
		{name: "3 only global quotas", campaign: func(c *engine.Campaign) { c.Quotas[0].Global = true }},
		{name: "3 open global quota", campaign: func(c *engine.Campaign) {
			c.Quotas = append(c.Quotas, engine.Quota{ID: 101, NumRespondents: 5, Global: true})
		}, counts: setQuota(101, engine.QuotaCounts{Completes: 4}), want: true},
		{name: "3 full global quota without conditions", campaign: func(c *engine.Campaign) {
			c.Quotas = append(c.Quotas, engine.Quota{ID: 101, NumRespondents: 5, Global: true})
		}, counts: setQuota(101, engine.QuotaCounts{Completes: 5})},
		{name: "3 full global quota the participant does not match", campaign: func(c *engine.Campaign) {
			c.Quotas = append(c.Quotas, engine.Quota{ID: 101, NumRespondents: 5, Global: true,
				Conditions: []engine.Condition{{QuestionID: engine.QuestionGender, Codes: []int32{1}}}})
		}, counts: setQuota(101, engine.QuotaCounts{Completes: 5}), want: true},
		{name: "3 full global quota the participant matches", campaign: func(c *engine.Campaign) {
			c.Quotas = append(c.Quotas, engine.Quota{ID: 101, NumRespondents: 5, Global: true,
				Conditions: []engine.Condition{{QuestionID: engine.QuestionGender, Codes: []int32{2}}}})
		}, counts: setQuota(101, engine.QuotaCounts{Completes: 5})},
		{name: "3 no quotas", campaign: func(c *engine.Campaign) { c.Quotas = nil }},

		{name: "4 quota without conditions matches everyone", campaign: func(c *engine.Campaign) { c.Quotas[0].Conditions = nil }, want: true},
		{name: "4 select code not selected", person: func(p *engine.Participant) { p.Answers[1].Codes = []int32{1} }},
		{name: "4 multi select intersects", campaign: func(c *engine.Campaign) {
			c.Quotas[0].Conditions = append(c.Quotas[0].Conditions, engine.Condition{QuestionID: 50, Codes: []int32{2, 3}})
		}, want: true},
		{name: "4 multi select disjoint", campaign: func(c *engine.Campaign) {
			c.Quotas[0].Conditions = append(c.Quotas[0].Conditions, engine.Condition{QuestionID: 50, Codes: []int32{2, 4}})
		}},
		{name: "4 age outside the list", person: func(p *engine.Participant) { p.Answers[0].Codes = []int32{33} }},
		{name: "4 zip normalized", campaign: func(c *engine.Campaign) {
			c.Quotas[0].Conditions = append(c.Quotas[0].Conditions, engine.Condition{QuestionID: engine.QuestionZip, Texts: []string{" sw1a 1aa"}})
		}, want: true},
		{name: "4 zip not listed", campaign: func(c *engine.Campaign) {
			c.Quotas[0].Conditions = append(c.Quotas[0].Conditions, engine.Condition{QuestionID: engine.QuestionZip, Texts: []string{"SW1A1AB"}})
		}},
		{name: "4 unanswered question", person: func(p *engine.Participant) { p.Answers = p.Answers[1:] }},

		{name: "5 excluded", campaign: func(c *engine.Campaign) { c.ExcludedParticipants = []int64{3, 7} }},
		{name: "5 supplier excluded", campaign: func(c *engine.Campaign) { c.ExcludedSuppliers = []int64{9, 4, 2} }},
		{name: "5 another supplier excluded", campaign: func(c *engine.Campaign) { c.ExcludedSuppliers = []int64{3, 5} }, want: true},
		{name: "5 someone else excluded", campaign: func(c *engine.Campaign) { c.ExcludedParticipants = []int64{3, 8} }, want: true},
		{name: "5 entered a related campaign", campaign: func(c *engine.Campaign) { c.Related = []int64{11} },
			person: func(p *engine.Participant) { p.Entries = []engine.Entry{{CampaignID: 11, At: ruleNow - 86400}} }},
		{name: "5 entered an unrelated campaign", campaign: func(c *engine.Campaign) { c.Related = []int64{11} },
			person: func(p *engine.Participant) { p.Entries = []engine.Entry{{CampaignID: 12, At: ruleNow - 86400}} }, want: true},
		{name: "5 reentry null: never twice", person: func(p *engine.Participant) {
			p.Entries = []engine.Entry{{CampaignID: 10, At: ruleNow - 90*86400}}
		}},
		{name: "5 reentry 0: unlimited", campaign: func(c *engine.Campaign) { c.ReentryMinutes = 0 },
			person: func(p *engine.Participant) { p.Entries = []engine.Entry{{CampaignID: 10, At: ruleNow - 1}} }, want: true},
		{name: "5 reentry interval not yet passed", campaign: func(c *engine.Campaign) { c.ReentryMinutes = 60 },
			person: func(p *engine.Participant) { p.Entries = []engine.Entry{{CampaignID: 10, At: ruleNow - 3599}} }},
		{name: "5 reentry interval passed", campaign: func(c *engine.Campaign) { c.ReentryMinutes = 60 },
			person: func(p *engine.Participant) { p.Entries = []engine.Entry{{CampaignID: 10, At: ruleNow - 3600}} }, want: true},

		{name: "6 retarget by transaction listed", campaign: retarget(engine.RetargetTransaction, 7, "", ruleNow+1), want: true},
		{name: "6 retarget by respondent not listed", campaign: retarget(engine.RetargetRespondent, 8, "", ruleNow+1)},
		{name: "6 retarget by device listed", campaign: retarget(engine.RetargetDevice, 0, "abc-123", ruleNow+1), want: true},
		{name: "6 retarget by device not listed", campaign: retarget(engine.RetargetDevice, 0, "abc-124", ruleNow+1)},
		{name: "6 retarget by hashed device listed", campaign: retarget(engine.RetargetHashedDevice, 0, engine.HashDeviceID("ABC-123"), ruleNow+1), want: true},
		{name: "6 retarget by hashed device, no device id", campaign: retarget(engine.RetargetHashedDevice, 0, engine.HashDeviceID("abc-123"), ruleNow+1),
			person: func(p *engine.Participant) { p.DeviceID, p.DeviceIDHash = "", "" }},
		{name: "6 expired retarget list admits everyone", campaign: retarget(engine.RetargetRespondent, 8, "", ruleNow), want: true},
		{name: "6 listed on an expired record only", campaign: func(c *engine.Campaign) {
			c.Retargets = []engine.Retarget{{Kind: 1, ParticipantID: 7, ExpiresAt: ruleNow}, {Kind: 1, ParticipantID: 8, ExpiresAt: ruleNow + 60}}
		}},

		{name: "7 daily completes below the cap", campaign: func(c *engine.Campaign) { c.MaxDailyCompletes = 3 },
			counts: func(ctr *engine.Counters) {
				ctr.SetCampaign(10, engine.CampaignCounts{Day: ruleNow / 86400, DayCompletes: 2})
			}, want: true},
		{name: "7 daily cap reached", campaign: func(c *engine.Campaign) { c.MaxDailyCompletes = 3 },
			counts: func(ctr *engine.Counters) {
				ctr.RecordOutcome(10, nil, true, ruleNow-3600)
				ctr.RecordOutcome(10, nil, true, ruleNow-60)
				ctr.RecordOutcome(10, nil, true, ruleNow)
			}},
		{name: "7 yesterday's completes do not count", campaign: func(c *engine.Campaign) { c.MaxDailyCompletes = 3 },
			counts: func(ctr *engine.Counters) {
				ctr.SetCampaign(10, engine.CampaignCounts{Day: ruleNow/86400 - 1, DayCompletes: 3})
			}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRule(t, tc) })
	}
}

func retarget(kind uint8, id int64, value string, until int64) func(*engine.Campaign) {
	return func(c *engine.Campaign) {
		c.Retargets = []engine.Retarget{{Kind: kind, ParticipantID: id, Value: value, ExpiresAt: until}}
	}
}

func TestEligibleReturnsMatchedQuotas(t *testing.T) {
	c := baseCampaign()
	c.Quotas = append(c.Quotas,
		engine.Quota{ID: 101, NumRespondents: 5, Conditions: []engine.Condition{{QuestionID: engine.QuestionGender, Codes: []int32{1}}}},
		engine.Quota{ID: 102, NumRespondents: 5, Global: true},
		engine.Quota{ID: 103, NumRespondents: 5}, // full, still counted
	)
	e := engine.New(nil)
	e.Counters().SetQuota(103, engine.QuotaCounts{Completes: 5})
	e.Load([]engine.Campaign{c})
	p := baseParticipant()
	got, ok := e.Eligible(&p, 10, ruleNow, []int64{-1})
	if !ok {
		t.Fatal("not eligible")
	}
	want := map[int64]bool{-1: true, 100: true, 102: true, 103: true}
	if len(got) != len(want) {
		t.Fatalf("got %v, want the keys of %v", got, want)
	}
	for _, id := range got {
		if !want[id] {
			t.Fatalf("got %v, want the keys of %v", got, want)
		}
	}
	if got, ok := e.Eligible(&p, 99, ruleNow, nil); ok || len(got) != 0 {
		t.Fatalf("unknown campaign: %v %v", got, ok)
	}
}

func TestRankingByEPC(t *testing.T) {
	mk := func(id, cpi int64, inc int) engine.Campaign {
		c := baseCampaign()
		c.ID, c.CPICents, c.Incidence = id, cpi, inc
		c.Quotas = []engine.Quota{{ID: id * 10, NumRespondents: 10}}
		return c
	}
	e := engine.New(nil)
	e.Load([]engine.Campaign{mk(1, 100, 50), mk(2, 300, 50), mk(3, 100, 100), mk(4, 300, 50), mk(5, 1000, 10)})
	// Campaign 2 has seen 100 sessions without a complete: its conversion
	// drops far below its stated incidence.
	e.Counters().SetCampaign(2, engine.CampaignCounts{Sessions: 100})
	p := baseParticipant()
	got := e.Match(&p, 0.5, ruleNow, 3, make([]engine.Offer, 0, 3))
	// EPCs: 4: 3×.5×.5=.75, 5: 10×.5×.1=.5, 3: 1×.5×1=.5, 1: .25, 2: 3×.5×(10/120)=.125
	wantIDs := []int64{4, 3, 5}
	if len(got) != 3 {
		t.Fatalf("got %d offers", len(got))
	}
	for i, o := range got {
		if o.CampaignID != wantIDs[i] {
			t.Fatalf("order %v, want %v", ids(got), wantIDs)
		}
	}
	if got[0].EPC != 0.75 || got[0].Conversion != 0.5 {
		t.Fatalf("offer %+v", got[0])
	}
	if c := engine.Conversion(50, 100, 0); c != 10.0/120 {
		t.Fatalf("conversion %v", c)
	}
}
