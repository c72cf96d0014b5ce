package engine_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// The property test draws small random markets over a deliberately tiny
// universe (few questions, codes, participants and devices) so that every
// rule fires often, sets random counters, and checks that Match and Eligible
// agree with the brute-force reference on 10,000+ (market, participant)
// pairs.

const propNow int64 = 1_700_000_000/86400*86400 + 3600

var (
	propQuestions = []int32{engine.QuestionAge, engine.QuestionGender, engine.QuestionZip, 50, 51}
	propZips      = []string{"AB1", "CD2", "EF3", "9410"}
	propDevices   = []string{"", "dev-a", "Dev-B"}
)

func propCondition(r *rand.Rand) engine.Condition {
	q := propQuestions[r.IntN(len(propQuestions))]
	c := engine.Condition{QuestionID: q}
	switch q {
	case engine.QuestionZip:
		for range r.IntN(3) {
			z := propZips[r.IntN(len(propZips))]
			if r.IntN(3) == 0 { // stored un-normalized: the index must normalize
				z = " " + z[:1] + " " + z[1:] + " "
			}
			c.Texts = append(c.Texts, z)
		}
	case engine.QuestionAge:
		for range r.IntN(4) {
			c.Codes = append(c.Codes, 18+r.Int32N(6))
		}
	default:
		for range r.IntN(3) {
			c.Codes = append(c.Codes, 1+r.Int32N(4))
		}
		if q == 50 && r.IntN(3) == 0 { // codes past the mask's 0..127 go through postings
			c.Codes = append(c.Codes, 200+r.Int32N(2))
		}
	}
	return c
}

func propQuota(r *rand.Rand, id int64) engine.Quota {
	q := engine.Quota{ID: id, NumRespondents: 1 + r.IntN(4), ClickBalanced: r.IntN(6) == 0, Global: r.IntN(5) == 0}
	if r.IntN(30) == 0 {
		// Wider than the index's condition mask: repeat lenient conditions so
		// that such a quota still matches often.
		lenient := engine.Condition{QuestionID: 51, Codes: []int32{1, 2, 3, 4}}
		for range 33 + r.IntN(3) {
			q.Conditions = append(q.Conditions, lenient)
		}
		q.Conditions[r.IntN(len(q.Conditions))] = propCondition(r)
		return q
	}
	for range r.IntN(4) {
		q.Conditions = append(q.Conditions, propCondition(r))
	}
	return q
}

func propMarket(r *rand.Rand, firstID int64, n int, nextQuota *int64) []engine.Campaign {
	cs := make([]engine.Campaign, n)
	for i := range cs {
		c := engine.Campaign{
			ID: firstID + int64(i), BuyerID: 1 + r.Int64N(3), CountryID: 1, Status: engine.StatusActive,
			CPICents: 50 + r.Int64N(4)*50, LOI: 10, Incidence: 10 * (1 + r.IntN(9)),
			ReentryMinutes: []int{engine.ReentryNever, 0, 30}[r.IntN(3)],
		}
		if r.IntN(10) == 0 {
			c.Status = []int{3, 5, 7}[r.IntN(3)]
		}
		if r.IntN(10) == 0 {
			c.CountryID = 2
		}
		if r.IntN(3) == 0 {
			c.Devices = uint8(r.IntN(8))
		}
		if r.IntN(4) == 0 {
			c.MaxDailyCompletes = 1 + r.IntN(3)
		}
		for range 1 + r.IntN(4) {
			*nextQuota++
			c.Quotas = append(c.Quotas, propQuota(r, *nextQuota))
		}
		if r.IntN(15) == 0 {
			c.Quotas = nil
		}
		if r.IntN(4) == 0 {
			for range 1 + r.IntN(3) {
				c.ExcludedParticipants = append(c.ExcludedParticipants, 1+r.Int64N(8))
			}
		}
		if r.IntN(6) == 0 {
			for range 1 + r.IntN(2) {
				c.ExcludedSuppliers = append(c.ExcludedSuppliers, 1+r.Int64N(4))
			}
		}
		if r.IntN(4) == 0 {
			for range 1 + r.IntN(4) {
				t := engine.Retarget{Kind: uint8(r.IntN(4)), ExpiresAt: propNow + r.Int64N(7200) - 3600}
				switch t.Kind {
				case 0, 1:
					t.ParticipantID = r.Int64N(8) // 0: unresolved
				case 2:
					t.Value = propDevices[r.IntN(len(propDevices))]
				case 3:
					t.Value = engine.HashDeviceID(propDevices[r.IntN(len(propDevices))])
				}
				c.Retargets = append(c.Retargets, t)
			}
		}
		cs[i] = c
	}
	// Relationships, merged in both directions, sometimes to campaigns that
	// are not in the market at all or to the campaign itself.
	for range r.IntN(n/2 + 1) {
		a := r.IntN(n)
		b := firstID + r.Int64N(int64(n)+3)
		cs[a].Related = append(cs[a].Related, b)
		if j := int(b - firstID); j < n {
			cs[j].Related = append(cs[j].Related, cs[a].ID)
		}
	}
	return cs
}

func propParticipant(r *rand.Rand, firstID int64, n int) *engine.Participant {
	p := &engine.Participant{ID: 1 + r.Int64N(8), CountryID: 1, PublisherID: 1 + r.Int64N(4), Device: 1 << r.IntN(3)}
	if r.IntN(10) == 0 {
		p.CountryID = 2
	}
	p.DeviceID = propDevices[r.IntN(len(propDevices))]
	p.DeviceIDHash = engine.HashDeviceID(p.DeviceID)
	for _, q := range propQuestions {
		if r.IntN(5) == 0 {
			continue // unanswered
		}
		a := engine.Answer{QuestionID: q}
		switch q {
		case engine.QuestionZip:
			a.Text = propZips[r.IntN(len(propZips))]
		case engine.QuestionAge:
			a.Codes = []int32{18 + r.Int32N(6)}
		case 50: // multi select, two codes past the mask's range among them
			for _, c := range []int32{1, 2, 3, 4, 200, 201} {
				if r.IntN(3) == 0 {
					a.Codes = append(a.Codes, c)
				}
			}
		default:
			a.Codes = []int32{1 + r.Int32N(4)}
		}
		p.Answers = append(p.Answers, a)
	}
	for id := firstID; id < firstID+int64(n)+3; id++ {
		if r.IntN(6) == 0 {
			p.Entries = append(p.Entries, engine.Entry{CampaignID: id, At: propNow - r.Int64N(3600)})
		}
	}
	return p
}

func propCounters(r *rand.Rand, ctr *engine.Counters, cs []engine.Campaign) {
	for _, c := range cs {
		for _, q := range c.Quotas {
			ctr.SetQuota(q.ID, engine.QuotaCounts{
				Completes: r.Int64N(int64(q.NumRespondents) + 1), InProgress: r.Int64N(3) - r.Int64N(2),
				Entries: r.Int64N(int64(q.NumRespondents) + 2),
			})
		}
		day := propNow / 86400
		if r.IntN(4) == 0 {
			day-- // yesterday's count must not cap today
		}
		sessions := r.Int64N(60)
		ctr.SetCampaign(c.ID, engine.CampaignCounts{Day: day, DayCompletes: r.Int64N(4), Sessions: sessions, Completes: r.Int64N(sessions + 1)})
	}
}

func TestMatchAgreesWithReference(t *testing.T) {
	const markets, perMarket = 500, 21
	r := rand.New(rand.NewPCG(7, 11))
	pairs, eligibleSeen := 0, 0
	var nextQuota int64
	var dst []engine.Offer
	for m := range markets {
		n := 3 + r.IntN(30)
		firstID := int64(m*100 + 1)
		cs := propMarket(r, firstID, n, &nextQuota)
		ctr := engine.NewCounters()
		propCounters(r, ctr, cs)
		e := engine.New(ctr)
		if m%2 == 0 {
			e.Load(cs)
		} else {
			// Reach the same set through With: start from a different set,
			// then change, add and remove campaigns.
			half := n / 2
			stale := propMarket(r, firstID, n, &nextQuota)
			e.Load(append(slices.Clone(stale[:half]), engine.Campaign{ID: firstID + 99, CountryID: 2, Status: engine.StatusActive}))
			e.Apply(cs, []int64{firstID + 99})
		}
		if got := e.Snapshot().Len(); got != activeCount(cs) {
			t.Fatalf("market %d: snapshot holds %d campaigns, want %d", m, got, activeCount(cs))
		}
		for range perMarket {
			p := propParticipant(r, firstID, n)
			share := 0.5 + r.Float64()/2
			want := refMatch(cs, ctr, p, share, propNow)
			dst = e.Match(p, share, propNow, 0, dst)
			pairs++
			eligibleSeen += len(want)
			if !sameOffers(dst, want) {
				t.Fatalf("market %d participant %+v:\n got %v\nwant %v", m, *p, ids(dst), ids(want))
			}
			if k := 1 + r.IntN(4); len(want) > 0 {
				top := e.Match(p, share, propNow, k, nil)
				if !sameOffers(top, want[:min(k, len(want))]) {
					t.Fatalf("market %d top %d: got %v want %v", m, k, ids(top), ids(want))
				}
			}
			for i := range cs {
				ref := refCampaign(&cs[i], ctr, p, propNow)
				got, ok := e.Eligible(p, cs[i].ID, propNow, nil)
				if ok != ref.ok {
					t.Fatalf("market %d campaign %d: Eligible ok=%v, reference %v", m, cs[i].ID, ok, ref.ok)
				}
				if ok {
					slices.Sort(got)
					want := slices.Clone(ref.quotas)
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Fatalf("market %d campaign %d: Eligible quotas %v, reference %v", m, cs[i].ID, got, want)
					}
				}
			}
		}
	}
	if pairs < 10000 {
		t.Fatalf("only %d pairs", pairs)
	}
	// The test is only meaningful when both outcomes are common.
	if eligibleSeen < pairs/2 {
		t.Fatalf("too few eligible campaigns (%d over %d pairs): generator too strict", eligibleSeen, pairs)
	}
	t.Logf("%d pairs, %d eligible offers", pairs, eligibleSeen)
}

func activeCount(cs []engine.Campaign) int {
	n := 0
	for _, c := range cs {
		if c.Status == engine.StatusActive {
			n++
		}
	}
	return n
}

func sameOffers(got, want []engine.Offer) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func ids(os []engine.Offer) string {
	s := "["
	for _, o := range os {
		s += fmt.Sprintf(" %d(%.4f)", o.CampaignID, o.EPC)
	}
	return s + " ]"
}
