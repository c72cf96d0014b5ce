package bench

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
)

// Hosts of the URLs the seeded accounts hand out; nothing listens there: the load generator
// never follows a redirect, it only reads where it points.
const (
	SurveyHost       = "https://survey.bench.test"
	PublisherReturn  = "https://publisher.bench.test/return"
	benchBuyerCount  = 50 // synth.Market draws buyer ids 1..50
	benchRevShare    = 0.6
	benchExchange    = 100
	benchPublisherNm = "Bench Publisher"
)

// questionIDs maps the ids of engine/synth's catalog to the standard catalog of the
// reference data (0002_reference_data.sql), so that the seeded market reads like one a buyer
// built through /api/v1. AGE, GENDER, ZIP and HISPANIC share their ids already.
var questionIDs = map[int32]int32{
	synth.Region: 100, synth.Income: 101, synth.Education: 102, synth.Employment: 103,
	synth.Marital: 104, synth.Children: 106, synth.Ethnicity: 112,
}

func refQuestion(q int32) int32 {
	if r, ok := questionIDs[q]; ok {
		return r
	}
	return q
}

// Account is a seeded buyer or publisher with the credentials the bench signs with.
type Account struct {
	ID         int64
	Email      string // buyers: the e-mail of their Basic credentials
	CustomerID string // buyers
	Token      string
	Secret     string
}

// Market is the synthetic market of one run: what engine/synth generated and the accounts
// it was seeded under.
type Market struct {
	Campaigns []engine.Campaign
	// Participants are the panel as the load sees it, filled by Seed as it writes them:
	// ids and devices only, so that ten million fit (their profiles and histories are
	// generated again from the seed while they are written).
	Participants []Panelist
	// panel is how many participants Seed writes, from synth.NewParticipantStream(panelSeed).
	panel     int
	panelSeed int64
	// Buyers[i] is synth buyer id i+1.
	Buyers    []Account
	Publisher Account
	// Links[i] is the supplier link of campaign i+1.
	Links []string
	// Room[i] is how many entries campaign i+1 admits for certain once seeded: the least
	// room left in any of its quotas (num_respondents less the seeded completes, or entries
	// for a click-balanced quota). An entry counts toward the quotas it matched only, so no
	// quota fills before the campaign has admitted Room[i] entries. The bench hands out no
	// more entry URLs of a campaign than its room, so that entries measure admissions.
	Room []int32
	// PastSessions is how many sessions of closed campaigns Seed writes before the market's
	// own month of history: the eleven months before it, as a marketplace's routing tables
	// hold them after a year (issue 14 item 6). They go to PastCampaigns() campaigns, ids
	// after the active ones, archived or reconciled.
	PastSessions int64
	// PartitionDays is the period of the sessions' partitions after a year of them (0: 30,
	// a month, as serve's sweeper sizes them by default).
	PartitionDays int
}

// pastPerCampaign is how many of the past sessions each closed campaign holds.
const pastPerCampaign = 1000

// PastCampaigns is how many closed campaigns hold the past sessions: ids len(Campaigns)+1
// onwards.
func (m *Market) PastCampaigns() int64 {
	return (m.PastSessions + pastPerCampaign - 1) / pastPerCampaign
}

// BuyerOf is the seeded buyer that owns campaign id (an active or a closed one).
func (m *Market) BuyerOf(id int64) Account {
	if id <= int64(len(m.Campaigns)) {
		return m.buyer(m.Campaigns[id-1].BuyerID)
	}
	return m.buyer(id)
}

// buyer is the seeded buyer of synth buyer id synthID (closed campaigns: their own id).
func (m *Market) buyer(synthID int64) Account { return m.Buyers[(synthID-1)%benchBuyerCount] }

// Panelist is a seeded participant as the load needs it: who it is and what device it asks
// from.
type Panelist struct {
	ID       int64
	Device   uint8
	DeviceID string
}

// GenerateMarket builds n campaigns and p participants (ids 1..n and 1..p) from seed; the
// participants are generated as Seed writes them.
func GenerateMarket(n, p int, seed int64) *Market {
	m := &Market{Campaigns: synth.Market(n, seed), panel: p, panelSeed: seed + 1}
	for i := range m.Campaigns {
		for j := range m.Campaigns[i].Quotas {
			m.Campaigns[i].Quotas[j].NumRespondents *= QuotaScale
		}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	m.Links = make([]string, n)
	for i := range m.Links {
		// Links as buyers write them: {ID} in the query, often {RESPONDENT_ID}, some signed.
		l := SurveyHost + "/s/" + strconv.Itoa(i+1) + "?tid={ID}"
		if r.IntN(2) == 0 {
			l += "&rid={RESPONDENT_ID}"
		}
		if r.IntN(3) == 0 {
			l += "&security_hash={LINK_HASH}"
		}
		m.Links[i] = l
	}
	return m
}

// QuotaScale multiplies engine/synth's quota targets (20–1,000) in the bench's market. Every
// participant's top offers concentrate on the few hundred best-earning campaigns, and the
// room left in their quotas bounds how many entries a run can have admitted (each harvested
// URL is followed once, within its campaign's room): at the synthetic targets, about 22,000
// URLs, a few seconds of entries at the target rate; at ten times them about 220,000 at 100k
// campaigns, which the entries and mix phases and two joining phases (a start from a
// snapshot, then one loading from PostgreSQL for minutes at 1,000 entries/s) need about 1.5
// times of; twenty times them leave every phase its whole window. Targets of 200–20,000
// completes are the general-population and tracker quotas of large marketplaces; matching
// does not depend on targets, only on which quotas are full.
const QuotaScale = 20

// UserID is the partner's user identifier of participant id.
func UserID(id int64) string { return "bench-" + strconv.FormatInt(id, 10) }

// profileJSON is the stored profile {"<question id>": [values]} of a participant.
func profileJSON(answers []engine.Answer) []byte {
	m := make(map[string]any, len(answers))
	for _, a := range answers {
		k := strconv.Itoa(int(refQuestion(a.QuestionID)))
		if a.Text != "" {
			m[k] = []string{a.Text}
		} else {
			m[k] = a.Codes
		}
	}
	b, _ := json.Marshal(m)
	return b
}
