// Package synth generates realistic synthetic markets (campaigns) and panels
// (participants) for the engine's tests and benchmarks and for bench/. The
// catalog mimics the standard qualification catalog of one country (the US):
// AGE, GENDER, ZIP, HISPANIC and the usual demographic questions with
// realistic answer distributions. Output depends only on the seed.
package synth

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/switchboard/switchboard/engine"
)

// Country is the country id of every generated campaign and participant.
const Country int32 = 1

// Now is the reference time (unix seconds, a UTC day boundary plus noon)
// around which entries and retargets are generated; match at Now.
const Now int64 = 1_760_000_000/86400*86400 + 43200

// Question ids of the synthetic catalog beyond the fixed engine ones.
const (
	Region     int32 = 96
	Income     int32 = 61
	Education  int32 = 633
	Employment int32 = 2189
	Children   int32 = 7064
	Marital    int32 = 632
	Ethnicity  int32 = 113
)

// zipCount is the number of distinct postal codes the market draws from.
const zipCount = 30000

// question describes how one catalog question is answered and targeted.
type question struct {
	id     int32
	weight float64 // relative chance that a qualification targets it
}

// catalog lists the targetable questions with how often quotas use them.
var catalog = []question{
	{engine.QuestionAge, 0.80}, {engine.QuestionGender, 0.50}, {Region, 0.20},
	{engine.QuestionZip, 0.05}, {Income, 0.20}, {Education, 0.10},
	{Employment, 0.10}, {Children, 0.10}, {Marital, 0.05}, {Ethnicity, 0.10},
	{engine.QuestionHispanic, 0.10},
}

// Answer distributions: weights of codes 1..len.
var (
	incomeW     = []float64{8, 9, 10, 10, 10, 9, 9, 8, 8, 7, 6, 6}
	educationW  = []float64{10, 28, 20, 10, 20, 10, 2}
	employmentW = []float64{45, 12, 6, 4, 14, 8, 6, 5}
	maritalW    = []float64{30, 48, 3, 11, 6, 2}
	ethnicityW  = []float64{60, 13, 6, 1, 0.5, 10, 5, 4.5}
	hispanicW   = []float64{82, 11, 1.5, 1, 0.8, 0.6, 0.5, 0.5, 0.4, 0.4, 0.3, 0.3, 0.3, 0.4}
)

// zipCode returns the i-th postal code; its first digit decides the region.
func zipCode(i int) string { return fmt.Sprintf("%05d", i*3+1000) }

func regionOfZip(i int) int32 { return int32(zipCode(i)[0]-'0')%4 + 1 }

func pick(r *rand.Rand, w []float64) int32 {
	t := 0.0
	for _, x := range w {
		t += x
	}
	x := r.Float64() * t
	for i, v := range w {
		if x < v {
			return int32(i + 1)
		}
		x -= v
	}
	return int32(len(w))
}

func codeRange(lo, hi int32) []int32 {
	out := make([]int32, 0, hi-lo+1)
	for c := lo; c <= hi; c++ {
		out = append(out, c)
	}
	return out
}

// someCodes draws a contiguous run of 1..maxLen codes out of 1..n.
func someCodes(r *rand.Rand, n, maxLen int) []int32 {
	l := 1 + r.IntN(min(maxLen, n))
	lo := 1 + r.IntN(n-l+1)
	return codeRange(int32(lo), int32(lo+l-1))
}

// condition draws one qualification on question q.
func condition(r *rand.Rand, q int32) engine.Condition {
	c := engine.Condition{QuestionID: q}
	switch q {
	case engine.QuestionAge:
		lo := 18 + r.IntN(48)
		span := 5 + r.IntN(36)
		c.Codes = codeRange(int32(lo), int32(min(lo+span, 99)))
	case engine.QuestionGender:
		c.Codes = []int32{1 + r.Int32N(2)}
	case Region:
		c.Codes = someCodes(r, 4, 2)
	case engine.QuestionZip:
		n := 10 + r.IntN(991)
		c.Texts = make([]string, n)
		for i := range c.Texts {
			c.Texts[i] = zipCode(r.IntN(zipCount))
		}
	case Income:
		c.Codes = someCodes(r, len(incomeW), 8)
	case Education:
		c.Codes = someCodes(r, len(educationW), 4)
	case Employment:
		c.Codes = someCodes(r, len(employmentW), 3)
	case Children:
		c.Codes = someCodes(r, 5, 3)
	case Marital:
		c.Codes = someCodes(r, len(maritalW), 2)
	case Ethnicity:
		c.Codes = someCodes(r, len(ethnicityW), 2)
	case engine.QuestionHispanic:
		if r.IntN(2) == 0 {
			c.Codes = []int32{1}
		} else {
			c.Codes = codeRange(2, int32(len(hispanicW)))
		}
	}
	return c
}

// conditions draws 1–4 qualifications on distinct questions, weighted by how
// often buyers target each question.
func conditions(r *rand.Rand) []engine.Condition {
	n := 1 + r.IntN(4)
	used := make([]bool, len(catalog))
	out := make([]engine.Condition, 0, n)
	for len(out) < n {
		t := 0.0
		for i, q := range catalog {
			if !used[i] {
				t += q.weight
			}
		}
		x := r.Float64() * t
		for i, q := range catalog {
			if used[i] {
				continue
			}
			if x < q.weight {
				used[i] = true
				out = append(out, condition(r, q.id))
				break
			}
			x -= q.weight
		}
	}
	return out
}

// Market returns n active campaigns of Country with ids 1..n and quota ids
// n*10+… , 1–4 quotas each with 1–4 qualifications per quota, plus the
// occasional global cap, click-balanced quota, device restriction, daily
// cap, reentry rule, relationship, exclusion list and retarget list. Each is
// in field for 3–14 days, started up to that long before Now.
func Market(n int, seed int64) []engine.Campaign {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	out := make([]engine.Campaign, n)
	quotaID := int64(0)
	for i := range out {
		c := engine.Campaign{
			ID: int64(i + 1), BuyerID: 1 + r.Int64N(50), CountryID: Country,
			Status: engine.StatusActive, CPICents: 50 + r.Int64N(450),
			LOI: 5 + r.IntN(26), Incidence: 10 + r.IntN(81),
			ReentryMinutes: engine.ReentryNever,
		}
		if r.Float64() < 0.3 {
			c.Devices = uint8(1 + r.IntN(6))
		}
		if r.Float64() < 0.2 {
			c.MaxDailyCompletes = 10 + r.IntN(190)
		}
		switch x := r.Float64(); {
		case x < 0.1:
			c.ReentryMinutes = 0
		case x < 0.2:
			c.ReentryMinutes = 1440
		}
		nq := 1 + r.IntN(4)
		for range nq {
			quotaID++
			c.Quotas = append(c.Quotas, engine.Quota{
				ID: quotaID, NumRespondents: 20 + r.IntN(480),
				ClickBalanced: r.Float64() < 0.1, Conditions: conditions(r),
			})
		}
		switch x := r.Float64(); {
		case x < 0.15:
			quotaID++
			c.Quotas = append(c.Quotas, engine.Quota{ID: quotaID, NumRespondents: 100 + r.IntN(900), Global: true})
		case x < 0.20:
			quotaID++
			c.Quotas = append(c.Quotas, engine.Quota{ID: quotaID, NumRespondents: 50 + r.IntN(450), Global: true,
				Conditions: []engine.Condition{condition(r, engine.QuestionGender)}})
		}
		if i > 0 && r.Float64() < 0.05 {
			other := int64(1 + r.IntN(i))
			c.Related = append(c.Related, other)
			out[other-1].Related = append(out[other-1].Related, c.ID)
		}
		if r.Float64() < 0.05 {
			for range 50 {
				c.ExcludedParticipants = append(c.ExcludedParticipants, 1+r.Int64N(1_000_000))
			}
		}
		if r.Float64() < 0.01 {
			for range 100 {
				t := engine.Retarget{Kind: uint8(r.IntN(4)), ExpiresAt: Now + 86400*(r.Int64N(60)-10)}
				switch t.Kind {
				case engine.RetargetTransaction, engine.RetargetRespondent:
					t.ParticipantID = 1 + r.Int64N(1_000_000)
				case engine.RetargetDevice:
					t.Value = deviceID(r)
				default:
					t.Value = engine.HashDeviceID(deviceID(r))
				}
				c.Retargets = append(c.Retargets, t)
			}
		}
		// Field period from the id alone, so the draws above stay as they were:
		// 3..14 days, started between 0 and days ago.
		h := uint64(c.ID) * 0x9e3779b97f4a7c15
		c.DaysInField = 3 + int(h>>60)%12
		c.FieldStart = Now - int64((h>>20)%uint64(c.DaysInField*86400))
		out[i] = c
	}
	return out
}

func deviceID(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff)
}

// Participants returns n profiled participants of Country with ids 1..n,
// answers drawn from realistic distributions (AGE, GENDER and ZIP always
// answered, the rest 80% of the time), a device, often a device id, and up
// to 20 entries into campaigns 1..campaigns within the 30 days before Now.
func Participants(n int, seed int64, campaigns int) []engine.Participant {
	out := make([]engine.Participant, n)
	st := NewParticipantStream(seed, campaigns)
	for i := range out {
		out[i] = st.Next()
	}
	return out
}

// ParticipantStream generates the participants of Participants(n, seed, campaigns) one at
// a time, in order, for any n: a panel of ten million need not be held to be written.
type ParticipantStream struct {
	r         *rand.Rand
	campaigns int
	next      int64
}

// NewParticipantStream starts the stream of Participants(_, seed, campaigns) at id 1.
func NewParticipantStream(seed int64, campaigns int) *ParticipantStream {
	return &ParticipantStream{r: rand.New(rand.NewPCG(uint64(seed), 0xbeef)), campaigns: campaigns, next: 1}
}

var devices = []uint8{engine.DeviceMobile, engine.DeviceMobile, engine.DeviceMobile, engine.DeviceDesktop, engine.DeviceDesktop, engine.DeviceTablet}

// Next returns the stream's next participant.
func (st *ParticipantStream) Next() engine.Participant {
	r, campaigns := st.r, st.campaigns
	p := engine.Participant{ID: st.next, CountryID: Country, Device: devices[r.IntN(len(devices))]}
	st.next++
	if r.IntN(2) == 0 {
		p.DeviceID = deviceID(r)
		p.DeviceIDHash = engine.HashDeviceID(p.DeviceID)
	}
	zip := r.IntN(zipCount)
	age := int32(18 + r.IntN(62))
	if r.IntN(3) == 0 {
		age = int32(25 + r.IntN(30))
	}
	add := func(q int32, codes ...int32) {
		p.Answers = append(p.Answers, engine.Answer{QuestionID: q, Codes: codes})
	}
	maybe := func() bool { return r.Float64() < 0.8 }
	add(engine.QuestionAge, age)
	add(engine.QuestionGender, pick(r, []float64{48, 52}))
	p.Answers = append(p.Answers, engine.Answer{QuestionID: engine.QuestionZip, Text: zipCode(zip)})
	if maybe() {
		add(engine.QuestionHispanic, pick(r, hispanicW))
	}
	if maybe() {
		add(Income, pick(r, incomeW))
	}
	if maybe() {
		add(Region, regionOfZip(zip))
	}
	if maybe() {
		add(Ethnicity, pick(r, ethnicityW))
	}
	if maybe() {
		add(Marital, pick(r, maritalW))
	}
	if maybe() {
		add(Education, pick(r, educationW))
	}
	if maybe() {
		add(Employment, pick(r, employmentW))
	}
	if maybe() {
		if r.Float64() < 0.55 {
			add(Children, 1)
		} else {
			a := 2 + r.Int32N(4)
			if b := 2 + r.Int32N(4); b != a {
				add(Children, min(a, b), max(a, b))
			} else {
				add(Children, a)
			}
		}
	}
	sortAnswers(p.Answers)
	if campaigns > 0 {
		seen := map[int64]bool{}
		for range r.IntN(21) {
			id := 1 + r.Int64N(int64(campaigns))
			if !seen[id] {
				seen[id] = true
				p.Entries = append(p.Entries, engine.Entry{CampaignID: id, At: Now - r.Int64N(30*86400)})
			}
		}
		sortEntries(p.Entries)
	}
	return p
}

func sortAnswers(a []engine.Answer) {
	slices.SortFunc(a, func(x, y engine.Answer) int { return cmp.Compare(x.QuestionID, y.QuestionID) })
}

func sortEntries(e []engine.Entry) {
	slices.SortFunc(e, func(x, y engine.Entry) int { return cmp.Compare(x.CampaignID, y.CampaignID) })
}
