package engine_test

import (
	"testing"

	"github.com/switchboard/switchboard/engine"
)

func feasibilityPanel(t *testing.T) *engine.Panel {
	t.Helper()
	pl := engine.NewPanel()
	add := func(id int64, country int32, gender int32, activeDays int, lastDaysAgo int64) {
		prof := engine.Participant{ID: id, CountryID: country, Answers: []engine.Answer{
			{QuestionID: engine.QuestionGender, Codes: []int32{gender}},
		}}
		for d := range activeDays {
			if _, err := pl.Upsert(1, string(rune(id)), prof, ruleNow-(lastDaysAgo+int64(d))*86400); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range int64(10) {
		add(100+i, 1, 2, 30, 0) // women active every day
		add(200+i, 1, 1, 1, 0)  // men active once, today
		add(300+i, 1, 2, 1, 40) // inactive for 40 days: not counted
		add(400+i, 2, 2, 30, 0) // another country
	}
	return pl
}

func TestFeasibility(t *testing.T) {
	pl := feasibilityPanel(t)
	women := engine.Condition{QuestionID: engine.QuestionGender, Codes: []int32{2}}
	men := engine.Condition{QuestionID: engine.QuestionGender, Codes: []int32{1}}
	req := engine.FeasibilityRequest{CountryID: 1, Incidence: 50, LOI: 10, DaysInField: 5, Quotas: []engine.Quota{
		{ID: 1, NumRespondents: 100, Conditions: []engine.Condition{women}},
		{ID: 2, NumRespondents: 1, Conditions: []engine.Condition{men}},
	}}
	res := engine.Feasibility(req, pl, ruleNow, nil)
	// Women: 10 × chance 1 × 0.5 = 5. Men: 10 × (1 − (29/30)^5 ≈ 0.156) × 0.5 ≈ 0.78.
	if res.OverNumDays != 5 || res.Quotas[0].EstimatedCompletes != 5 || res.Quotas[1].EstimatedCompletes != 0 || res.Quotas[0].ID != 1 {
		t.Fatalf("per quota: %+v", res)
	}
	if res.EstimatedCompletes != 5 { // 5 + min(0.78, 1) = 5.78
		t.Fatalf("total %d, want 5", res.EstimatedCompletes)
	}

	capped := req
	capped.Quotas = append(capped.Quotas, engine.Quota{ID: 3, NumRespondents: 3, Global: true})
	if got := engine.Feasibility(capped, pl, ruleNow, nil).EstimatedCompletes; got != 3 {
		t.Fatalf("global cap: total %d, want 3", got)
	}
	closedMen := req
	closedMen.Quotas = append(closedMen.Quotas, engine.Quota{ID: 3, NumRespondents: 0, Global: true, Conditions: []engine.Condition{men}})
	if got := engine.Feasibility(closedMen, pl, ruleNow, nil).EstimatedCompletes; got != 5 {
		t.Fatalf("global quota on men only: total %d, want 5", got)
	}

	long := req
	long.LOI, long.Incidence = 60, 100 // factor sqrt(15/60) = 0.5
	if got := engine.Feasibility(long, pl, ruleNow, nil).Quotas[0].EstimatedCompletes; got != 5 {
		t.Fatalf("long interview: %d, want 5", got)
	}
	longer := req
	longer.DaysInField = 0
	if got := engine.Feasibility(longer, pl, ruleNow, nil).OverNumDays; got != engine.DefaultDaysInField {
		t.Fatalf("default days %d", got)
	}
}

func TestFeasibilityUnknownQuestion(t *testing.T) {
	pl := feasibilityPanel(t)
	known := func(country, q int32) bool { return q == engine.QuestionGender }
	req := engine.FeasibilityRequest{CountryID: 1, Incidence: 50, LOI: 10, Quotas: []engine.Quota{
		{NumRespondents: 100, Conditions: []engine.Condition{{QuestionID: engine.QuestionGender, Codes: []int32{2}}}},
		{NumRespondents: 100, Conditions: []engine.Condition{{QuestionID: 723, Codes: []int32{1}}, {QuestionID: 723, Codes: []int32{2}}}},
	}}
	res := engine.Feasibility(req, pl, ruleNow, known)
	if res.EstimatedCompletes != 0 {
		t.Fatalf("total %d, want 0", res.EstimatedCompletes)
	}
	if res.Quotas[0].Message != "" || res.Quotas[1].Message != "We can't estimate feasibility for question ids: ( 723 )" {
		t.Fatalf("messages %+v", res.Quotas)
	}
}
