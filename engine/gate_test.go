package engine

import "testing"

// TestGate checks which question gates a campaign (a necessary condition of
// every non-global quota, by codes alone, the narrowest), and that Match
// refuses by the gate exactly the participants no quota admits.
func TestGate(t *testing.T) {
	const gender, age, zip, region int32 = QuestionGender, QuestionAge, QuestionZip, 96
	cond := func(q int32, codes ...int32) Condition { return Condition{QuestionID: q, Codes: codes} }
	ages := func(from, to int32) Condition {
		c := Condition{QuestionID: age}
		for a := from; a <= to; a++ {
			c.Codes = append(c.Codes, a)
		}
		return c
	}
	quota := func(global bool, cs ...Condition) Quota {
		return Quota{NumRespondents: 10, Global: global, Conditions: cs}
	}
	person := func(g, a int32) Participant {
		return Participant{ID: 1, CountryID: 1, Device: DeviceMobile, Answers: []Answer{
			{QuestionID: age, Codes: []int32{a}}, {QuestionID: gender, Codes: []int32{g}}, {QuestionID: zip, Text: "10001"}, {QuestionID: region, Codes: []int32{g}}}}
	}
	for _, tc := range []struct {
		name   string
		quotas []Quota
		gate   int32 // question gating the campaign, 0: none
		codes  []int32
	}{
		{
			name:   "every quota asks gender; age is wider",
			quotas: []Quota{quota(false, cond(gender, 2), ages(18, 34)), quota(false, ages(35, 54), cond(gender, 2))},
			gate:   gender, codes: []int32{2},
		},
		{
			name:   "the narrower union wins",
			quotas: []Quota{quota(false, cond(region, 1, 2, 3, 4, 5, 6), ages(18, 20)), quota(false, cond(region, 7), ages(60, 61))},
			gate:   age, codes: []int32{18, 19, 20, 60, 61},
		},
		{
			name:   "union over the quotas",
			quotas: []Quota{quota(false, cond(gender, 1)), quota(false, cond(gender, 2))},
			gate:   gender, codes: []int32{1, 2},
		},
		{name: "no question common to every quota", quotas: []Quota{quota(false, cond(gender, 2)), quota(false, ages(18, 34))}},
		{name: "texts match by postings", quotas: []Quota{{NumRespondents: 10, Conditions: []Condition{{QuestionID: zip, Texts: []string{"10001"}}}}}},
		{name: "a code past the mask is posted", quotas: []Quota{quota(false, cond(region, 3, 300))}},
		{name: "a quota for everyone", quotas: []Quota{quota(false, cond(gender, 2)), quota(false)}},
		{
			name:   "global quotas do not gate",
			quotas: []Quota{quota(false, ages(18, 30)), quota(true, cond(gender, 2))},
			gate:   age, codes: ages(18, 30).Codes,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Campaign{ID: 1, CountryID: 1, Status: StatusActive, CPICents: 100, Incidence: 50, Quotas: tc.quotas}
			for i := range c.Quotas {
				c.Quotas[i].ID = int64(i + 1)
			}
			e := New(nil)
			e.Load([]Campaign{c})
			part := e.snap.Load().parts[1].base
			m := &part.camps[0]
			var want [2]uint64
			for _, code := range tc.codes {
				want[code>>6] |= 1 << (code & 63)
			}
			switch {
			case tc.gate == 0 && m.gateQS >= 0:
				t.Fatalf("gated by question %d, want no gate", part.qids[m.gateQS])
			case tc.gate != 0 && (m.gateQS < 0 || part.qids[m.gateQS] != tc.gate || m.gate != want):
				t.Fatalf("gate slot %d mask %x, want question %d mask %x", m.gateQS, m.gate, tc.gate, want)
			}
			// Whatever the gate, Match offers the campaign to exactly the
			// participants a quota admits.
			offered := map[bool]int{}
			for _, g := range []int32{1, 2} {
				for _, a := range []int32{19, 40, 60} {
					p := person(g, a)
					_, eligible := e.Eligible(&p, c.ID, 1_700_000_000, nil)
					got := len(e.Match(&p, 0.5, 1_700_000_000, 10, nil)) == 1
					if got != eligible {
						t.Errorf("gender %d age %d: offered %v, eligible %v", g, a, got, eligible)
					}
					offered[got]++
				}
			}
			if tc.gate != 0 && tc.name != "union over the quotas" && (offered[true] == 0 || offered[false] == 0) {
				t.Errorf("offered to %d participants of 6, want some refused by the gate and some not", offered[true])
			}
		})
	}
}
