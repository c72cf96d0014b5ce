package bench

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
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

// SeedStats says how much was written and how long it took.
type SeedStats struct {
	Rows map[string]int64
	Took time.Duration
}

// Seed migrates the database at url and writes m into it: accounts through the persistence
// API (51 rows), everything else with COPY straight into the tables. At 10,000 campaigns the
// market is ~10,000 campaigns, ~25,000 quotas, ~60,000 quota qualifications (ZIP lists of up
// to 1,000 codes), 200,000 participants and ~2 million past sessions; through /api/v1 that
// would be tens of thousands of validated requests with per-request NOTIFY and engine
// updates, minutes of setup. The schema is the contract the server loads from, so writing it
// directly yields exactly the state the API would have produced. now anchors the synthetic
// times (synth.Now) to the wall clock.
func Seed(ctx context.Context, url string, m *Market, history bool, now time.Time, log *zap.Logger) (SeedStats, error) {
	start := time.Now()
	st := SeedStats{Rows: map[string]int64{}}
	db, err := persistence.Open(ctx, url, log)
	if err != nil {
		return st, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return st, err
	}
	// The seeded database is one this release serves: no process of a release before
	// migration 0046 runs beside it, so the sweeper's retirement is done at once (and the
	// copy below builds none of the retired indexes).
	if _, err := db.Maintenance.RetireSessionIndexes(ctx); err != nil {
		db.Close()
		return st, err
	}
	m.Buyers = make([]Account, benchBuyerCount)
	for i := range m.Buyers {
		tok, sec := fmt.Sprintf("bench-buyer-token-%02d", i+1), fmt.Sprintf("bench-buyer-secret-%02d", i+1)
		email := fmt.Sprintf("buyer%02d@bench.test", i+1)
		b, _, err := db.Accounts.CreateBuyerWith(ctx, email, fmt.Sprintf("Bench Buyer %d", i+1),
			persistence.EnvStaging, persistence.BuyerCredentials{Token: tok, Secret: sec})
		if err != nil {
			db.Close()
			return st, fmt.Errorf("create buyer: %w", err)
		}
		m.Buyers[i] = Account{ID: b.ID, Email: email, CustomerID: b.CustomerID, Token: tok, Secret: sec}
	}
	pub, _, err := db.Accounts.CreatePublisherWith(ctx, persistence.NewPublisher{Name: benchPublisherNm, CurrencyName: "Coins",
		ExchangeRate: benchExchange, RevenueShare: benchRevShare, RedirectURL: PublisherReturn, Environment: persistence.EnvStaging},
		"bench-publisher-token", "bench-publisher-secret")
	db.Close()
	if err != nil {
		return st, fmt.Errorf("create publisher: %w", err)
	}
	m.Publisher = Account{ID: pub.ID, Token: "bench-publisher-token", Secret: "bench-publisher-secret"}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return st, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return copyMarket(ctx, tx, m, history, now, st.Rows) })
	if err != nil {
		return st, err
	}
	// A serving database's tables have been vacuumed as they grew: their pages all-visible,
	// their hint bits set. Left as copied, autovacuum's insert threshold would vacuum each
	// copied table during the measured phases, reading and dirtying every page beside the
	// measured work: the ten partitions of the history during the entries and mix phases, and
	// respondents (78,677 blocks read in one entries phase) and participants.
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		return st, err
	}
	// The copy left gigabytes of WAL and dirty pages behind; a checkpoint spreading their
	// writes (and syncing them at its end) through the measured phases would be measured as
	// the server's commit latency. A serving database is not in the middle of a bulk load.
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		return st, err
	}
	st.Took = time.Since(start)
	return st, nil
}

// shift moves a synthetic time (relative to synth.Now) onto the wall clock.
func shift(now time.Time, at int64) time.Time {
	return now.Add(time.Duration(at-synth.Now) * time.Second)
}

func copyMarket(ctx context.Context, tx pgx.Tx, m *Market, history bool, now time.Time, rows map[string]int64) error {
	r := rand.New(rand.NewPCG(42, 43))
	buyer := func(synthID int64) int64 { return m.buyer(synthID).ID }
	cp := func(table string, cols []string, src [][]any) error {
		n, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(src))
		rows[table] += n
		if err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
		return nil
	}
	// The rows are generated consistent with each other; checking every foreign key row by
	// row (four index probes per session) would double the load. This switches off the
	// foreign-key checks and the one trigger of the migrations (sessions_participations,
	// 0045), for this transaction only (the bench is the cluster's superuser): the seed
	// writes participations itself, in one sorted statement after the sessions.
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		return err
	}
	// The secondary indexes of sessions are built after the copy: sorted in memory, not
	// spilled, at a hundred million rows.
	if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '1GB'`); err != nil {
		return err
	}
	cs := m.Campaigns
	m.Room = make([]int32, len(cs))
	// The active campaigns were created before their month of history (synth draws entries
	// over the last 30 days): a campaign's sessions never precede it.
	created := now.Add(-31 * 24 * time.Hour)
	var projects, campaigns, quotas, quals, rels, rets, excl [][]any
	np := int64(m.panel)
	for i := range cs {
		c := &cs[i]
		b := buyer(c.BuyerID)
		name := fmt.Sprintf("Bench study %d", c.ID)
		projects = append(projects, []any{c.ID, b, name})
		var devices []int16
		for code := range 3 {
			if c.Devices&(1<<code) != 0 {
				devices = append(devices, int16(code))
			}
		}
		if devices == nil {
			devices = []int16{}
		}
		var daily, reentry any
		if c.MaxDailyCompletes > 0 {
			daily = c.MaxDailyCompletes
		}
		if c.ReentryMinutes != engine.ReentryNever {
			reentry = c.ReentryMinutes
		}
		campaigns = append(campaigns, []any{c.ID, b, c.ID, name, int32(c.CPICents), int32(c.CPICents), int32(5 + r.IntN(25)),
			int32(c.Incidence), int16(engine.StatusActive), int32(c.LOI), m.Links[i], daily, reentry, int32(1),
			len(c.Retargets) > 0, devices, created})
		room := int32(-1)
		for _, q := range c.Quotas {
			completes := 0
			if q.NumRespondents > 1 {
				completes = r.IntN(q.NumRespondents * 6 / 10)
			}
			left := int32(q.NumRespondents - completes)
			if q.ClickBalanced {
				left = int32(q.NumRespondents - completes - completes/2)
			}
			if room < 0 || left < room {
				room = max(left, 0)
			}
			quotas = append(quotas, []any{q.ID, c.ID, fmt.Sprintf("Quota %d", q.ID), int32(q.NumRespondents), q.ClickBalanced,
				q.Global, int32(completes), int32(completes + completes/2)})
			for _, cond := range q.Conditions {
				codes, texts := cond.Codes, cond.Texts
				if codes == nil {
					codes = []int32{}
				}
				if texts == nil {
					texts = []string{}
				}
				quals = append(quals, []any{q.ID, refQuestion(cond.QuestionID), codes, texts})
			}
		}
		m.Room[i] = max(room, 0)
		for _, o := range c.Related {
			if o < c.ID {
				rels = append(rels, []any{b, c.ID, o})
			}
		}
		seenRet := map[string]bool{}
		for _, t := range c.Retargets {
			ident, pid := t.Value, any(nil)
			switch t.Kind {
			case engine.RetargetTransaction:
				ident, pid = fmt.Sprintf("BT%d", t.ParticipantID), t.ParticipantID
			case engine.RetargetRespondent:
				ident, pid = fmt.Sprintf("BR%d", t.ParticipantID), t.ParticipantID
			}
			key := strconv.Itoa(int(t.Kind)) + ident
			if seenRet[key] {
				continue
			}
			seenRet[key] = true
			rets = append(rets, []any{c.ID, int16(t.Kind), ident, pid, shift(now, t.ExpiresAt)})
		}
		seenEx := map[int64]bool{}
		for _, pid := range c.ExcludedParticipants {
			// synth draws excluded ids up to 1,000,000; the table references participants.
			pid = (pid-1)%max(np, 1) + 1
			if np > 0 && !seenEx[pid] {
				seenEx[pid] = true
				excl = append(excl, []any{c.ID, pid})
			}
		}
	}
	if err := cp("projects", []string{"id", "buyer_id", "name"}, projects); err != nil {
		return err
	}
	if err := cp("campaigns", []string{"id", "buyer_id", "project_id", "name", "cpi_cents", "cpi_bid_cents", "days_in_field",
		"incidence", "status", "length_of_interview", "supplier_link", "max_daily_completes", "reentry_interval",
		"country_language_id", "is_retarget", "supported_devices", "created_at"}, campaigns); err != nil {
		return err
	}
	if err := cp("campaign_quotas", []string{"id", "campaign_id", "name", "num_respondents", "is_click_balanced", "is_global",
		"completes", "entries"}, quotas); err != nil {
		return err
	}
	if err := cp("quota_qualifications", []string{"quota_id", "question_id", "pre_codes", "text_values"}, quals); err != nil {
		return err
	}
	if err := cp("campaign_relationships", []string{"buyer_id", "campaign_id", "related_campaign_id"}, rels); err != nil {
		return err
	}
	if err := cp("campaign_retargets", []string{"campaign_id", "retargeting_type", "identifier", "participant_id", "expires_at"}, rets); err != nil {
		return err
	}
	projects, campaigns, quotas, quals, rels, rets = nil, nil, nil, nil, nil, nil

	// Participants and their history, generated as they are streamed (CopyFromFunc), so
	// that ten million are never held: the history is generated again from the same seed.
	stream := synth.NewParticipantStream(m.panelSeed, len(cs))
	m.Participants = make([]Panelist, 0, m.panel)
	entries := 0
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"participants"},
		[]string{"id", "publisher_id", "user_identifier", "country_id", "profile", "last_active_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if len(m.Participants) >= m.panel {
				return nil, nil
			}
			p := stream.Next()
			m.Participants = append(m.Participants, Panelist{ID: p.ID, Device: p.Device, DeviceID: p.DeviceID})
			entries += len(p.Entries)
			return []any{p.ID, m.Publisher.ID, UserID(p.ID), int32(1), profileJSON(p.Answers), now}, nil
		}))
	rows["participants"] += n
	if err != nil {
		return fmt.Errorf("copy participants: %w", err)
	}
	if history || m.PastSessions > 0 {
		// Building the secondary indexes once after the load is several times faster than
		// maintaining them row by row; the definitions are read back from the catalog, so the
		// schema ends up exactly as migrated. Constraint indexes (primary key, unique tid)
		// stay in place.
		defs, err := dropIndexes(ctx, tx, "sessions")
		if err != nil {
			return err
		}
		if err := copyPastSessions(ctx, tx, m, now, rows); err != nil {
			return err
		}
		if history {
			if err := copyHistory(ctx, tx, m, now, r, entries, rows); err != nil {
				return err
			}
		}
		for _, d := range defs {
			if _, err := tx.Exec(ctx, d); err != nil {
				return fmt.Errorf("recreate index: %w", err)
			}
		}
		n, err := tx.Exec(ctx, seedParticipationsSQL)
		if err != nil {
			return fmt.Errorf("participations: %w", err)
		}
		rows["participations"] += n.RowsAffected()
		// The time range of each partition, as serve's sweeper records it: what lets a
		// campaign's reads skip the partitions before it.
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM switchboard_ensure_session_partitions('30 days', 2, $1)`, seedPartitionIDs); err != nil {
			return fmt.Errorf("record the partitions' time ranges: %w", err)
		}
		// Every seeded session has its outcome: a serving database's sweeper read each once
		// its window passed, and moved its campaign's mark past it. Without the marks the
		// run's first sweep of each campaign its entries reach walks the campaign's month of
		// history (183k buffers, 45k of them read from disk, at 10k campaigns), a burst of
		// PostgreSQL in whichever phase it falls.
		if _, err := tx.Exec(ctx, `INSERT INTO session_sweep_marks (campaign_id, next_id)
			SELECT c.id, (SELECT COALESCE(max(s.id), 0) + 1 FROM sessions s) FROM campaigns c`); err != nil {
			return fmt.Errorf("sweep marks: %w", err)
		}
	}
	if err := cp("campaign_exclusions", []string{"campaign_id", "participant_id"}, excl); err != nil {
		return err
	}
	for _, s := range []string{"projects", "campaigns", "campaign_quotas", "participants"} {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%s', 'id'), GREATEST((SELECT max(id) FROM %s), 1))`, s, s)); err != nil {
			return err
		}
	}
	return nil
}

// seedParticipationsSQL writes what the trigger on sessions (migration 0045) would have
// kept for the copied sessions: the latest entry of each (campaign, participant), in key
// order, so that the primary key grows by appends.
const seedParticipationsSQL = `INSERT INTO participations (campaign_id, participant_id, entered_at, session_id, offer_nonce)
	SELECT DISTINCT ON (campaign_id, participant_id) campaign_id, participant_id, entered_at, id, offer_nonce
	FROM sessions WHERE NOT is_test AND participant_id IS NOT NULL
	ORDER BY campaign_id, participant_id, entered_at DESC, id DESC`

// copyHistory writes the market's own month of sessions: the entries synth gave each
// participant, generated again from the panel's seed.
func copyHistory(ctx context.Context, tx pgx.Tx, m *Market, now time.Time, r *rand.Rand, entries int, rows map[string]int64) error {
	cs := m.Campaigns
	if err := partitionSessions(ctx, tx, int64(entries), m.partitionIDs()); err != nil {
		return err
	}
	var tidBuf [12]byte
	stream := synth.NewParticipantStream(m.panelSeed, len(cs))
	var p engine.Participant
	done, ei := 0, 0
	counts := newDailyCounts(len(cs), now)
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"sessions"},
		[]string{"tid", "campaign_id", "buyer_id", "publisher_id", "participant_id", "entered_at", "outcome", "outcome_at", "respondent_id"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for ei >= len(p.Entries) {
				if done >= m.panel {
					return nil, nil
				}
				p, ei = stream.Next(), 0
				done++
			}
			e := p.Entries[ei]
			ei++
			c := &cs[e.CampaignID-1]
			at := shift(now, e.At)
			for j := range tidBuf {
				tidBuf[j] = byte(r.Uint32())
			}
			b := m.buyer(c.BuyerID).ID
			out, outAt := outcomes[r.IntN(len(outcomes))], at.Add(time.Duration(c.LOI)*time.Minute)
			counts.add(c.ID, outAt, out == outcome.Complete)
			return []any{hex.EncodeToString(tidBuf[:]), c.ID, b, m.Publisher.ID, p.ID,
				at, out, outAt, seedRespondentID(b, p.ID)}, nil
		}))
	rows["sessions"] += n
	if err != nil {
		return fmt.Errorf("copy sessions: %w", err)
	}
	if err := counts.copy(ctx, tx, rows); err != nil {
		return err
	}
	return copyRespondents(ctx, tx, m, rows)
}

// dailyCounts tallies the market's seeded outcomes per campaign and UTC day of the outcome,
// as serve's callbacks count them in campaign_daily_counts: a campaign's learned conversion
// and its sessions so far (which decide whether the balanced allocation still explores it)
// come from there, so a seed without them would leave every campaign looking brand new
// beside a month of its own sessions.
type dailyCounts struct {
	firstDay int64   // UTC day of index 0
	days     int     // days per campaign
	n        []int32 // (campaign-1)*days+day: outcomes, completes
}

// newDailyCounts covers campaigns 1..campaigns over the days of the history (30 days before
// now, the outcomes up to a day after their entries).
func newDailyCounts(campaigns int, now time.Time) *dailyCounts {
	const days = 33
	return &dailyCounts{firstDay: now.Unix()/86400 - 31, days: days, n: make([]int32, campaigns*days*2)}
}

func (d *dailyCounts) add(campaignID int64, at time.Time, complete bool) {
	day := int(at.Unix()/86400 - d.firstDay)
	if day < 0 || day >= d.days {
		panic(fmt.Sprintf("seed: outcome at %v outside the history's days", at))
	}
	i := (int(campaignID-1)*d.days + day) * 2
	d.n[i]++
	if complete {
		d.n[i+1]++
	}
}

// copy writes the tallies' nonzero rows to campaign_daily_counts.
func (d *dailyCounts) copy(ctx context.Context, tx pgx.Tx, rows map[string]int64) error {
	i := 0
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"campaign_daily_counts"}, []string{"campaign_id", "day", "outcomes", "completes"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for ; i < len(d.n); i += 2 {
				if d.n[i] == 0 {
					continue
				}
				k := i / 2
				day := time.Unix((d.firstDay+int64(k%d.days))*86400, 0).UTC()
				row := []any{int64(k/d.days) + 1, day, d.n[i], d.n[i+1]}
				i += 2
				return row, nil
			}
			return nil, nil
		}))
	rows["campaign_daily_counts"] += n
	if err != nil {
		return fmt.Errorf("copy campaign_daily_counts: %w", err)
	}
	return nil
}

// copyRespondents writes the respondent id each buyer knows each participant by, for every
// buyer whose campaign a participant entered in the market's month of history: what those
// entries left in respondents, which every entry reads and the first entry to a buyer
// writes.
func copyRespondents(ctx context.Context, tx pgx.Tx, m *Market, rows map[string]int64) error {
	stream := synth.NewParticipantStream(m.panelSeed, len(m.Campaigns))
	var p engine.Participant
	var buyers []int64 // of the participant, distinct
	done := 0
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"respondents"}, []string{"buyer_id", "participant_id", "respondent_id"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for len(buyers) == 0 {
				if done >= m.panel {
					return nil, nil
				}
				p = stream.Next()
				done++
				for _, e := range p.Entries {
					if b := m.buyer(m.Campaigns[e.CampaignID-1].BuyerID).ID; !slices.Contains(buyers, b) {
						buyers = append(buyers, b)
					}
				}
			}
			b := buyers[len(buyers)-1]
			buyers = buyers[:len(buyers)-1]
			return []any{b, p.ID, seedRespondentID(b, p.ID)}, nil
		}))
	rows["respondents"] += n
	if err != nil {
		return fmt.Errorf("copy respondents: %w", err)
	}
	return nil
}

// seedRespondentID is the respondent id of a seeded participant for a buyer: 20 hex digits
// as serve draws them, but growing with the participant within each buyer, so that the copy
// appends to the unique index on (buyer_id, respondent_id) rather than writing it at random.
func seedRespondentID(buyerID, participantID int64) string {
	return fmt.Sprintf("%06X%014X", buyerID&0xFFFFFF, participantID)
}

// outcomes of seeded past sessions, in rough marketplace proportions.
var outcomes = []string{outcome.Complete, outcome.Complete, outcome.Disqualified, outcome.Disqualified, outcome.Disqualified, outcome.OverQuota, outcome.OverQuota, outcome.QualityTerm}

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

// partitionIDs is the span of each partition of sessions the seed adds: after a year of
// sessions (PastSessions), PartitionDays of them at the past rate, as serve's sweeper sizes
// them (PartitionPolicy.Period); else seedPartitionIDs.
func (m *Market) partitionIDs() int64 {
	days := cmp.Or(m.PartitionDays, 30)
	period := int64(float64(m.PastSessions) * float64(time.Duration(days)*24*time.Hour) / float64(pastSpan))
	return max(period, seedPartitionIDs)
}

// seedPartitionIDs is the span of each partition of sessions the seed adds: the serve
// sweeper's smallest (persistence.PartitionPolicy.MinIDs, a tid block), as a new marketplace
// would have.
const seedPartitionIDs = 1 << 20

// partitionSessions adds partitions of sessions (partitioned by ranges of id, migration 0036)
// of span ids each (ending where a tid block ends, as the sweeper's do: migration 0043) until
// the ids the next n rows will take have one: an insert whose id has no partition fails, and
// the serve sweeper keeps only a few partitions ahead of the sequence.
func partitionSessions(ctx context.Context, tx pgx.Tx, n, span int64) error {
	var next, top int64
	if err := tx.QueryRow(ctx, `SELECT (SELECT last_value + 1 FROM sessions_id_seq),
		(SELECT coalesce(max(id_to), 1) FROM session_partitions)`).Scan(&next, &top); err != nil {
		return fmt.Errorf("session partitions: %w", err)
	}
	for top <= next+n {
		if err := tx.QueryRow(ctx, `WITH e AS (SELECT switchboard_session_partition_end($1, $2) AS hi)
			SELECT hi FROM e, switchboard_add_session_partition($1, (SELECT hi FROM e))`, top, span).Scan(&top); err != nil {
			return fmt.Errorf("add session partition: %w", err)
		}
	}
	return nil
}

// dropIndexes drops the indexes of table that back no constraint and returns the
// statements that recreate them. An index of a partitioned table is recreated on every partition (its catalog
// definition reads "ON ONLY", which would build it on the parent alone, left invalid).
func dropIndexes(ctx context.Context, tx pgx.Tx, table string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename = $1
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`, table)
	if err != nil {
		return nil, err
	}
	var names, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			rows.Close()
			return nil, err
		}
		names, defs = append(names, n), append(defs, strings.Replace(d, " ON ONLY ", " ON ", 1))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{n}.Sanitize()); err != nil {
			return nil, err
		}
	}
	return defs, nil
}

// pastSpan is the time the past sessions cover: the eleven months before the market's own
// month of history (synth draws entries over the last 30 days).
const (
	pastSpan   = 335 * 24 * time.Hour
	pastLatest = 30 * 24 * time.Hour
	// pastOpen is how many closed campaigns were in field at once: a past session goes to
	// one of the pastOpen campaigns around its time, so each campaign is in field for about a
	// week at a hundred thousand closed campaigns.
	pastOpen = 2000
)

// copyPastSessions writes m.PastSessions sessions of closed campaigns spread evenly over the
// eleven months before the market's history, oldest first with ids 1..PastSessions (ids
// grow with time, as the id sequence makes them), each with a tid that names its id block
// as serve's tids do; and the closed campaigns (and their projects) they belong to. The
// partitions are sized as serve's sweeper sizes them: a month of sessions each at this rate.
func copyPastSessions(ctx context.Context, tx pgx.Tx, m *Market, now time.Time, rows map[string]int64) error {
	n := m.PastSessions
	if n <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(m.panelSeed), 11))
	first := int64(len(m.Campaigns)) + 1
	k := m.PastCampaigns()
	start := now.Add(-pastLatest - pastSpan)
	step := pastSpan / time.Duration(n)
	open := min(pastOpen, k)
	// Campaign first+i is in field while the window of pastOpen campaigns the sessions go
	// to covers it.
	at := func(i int64) time.Time {
		return start.Add(time.Duration(float64(pastSpan) * float64(min(max(i, 0), k)) / float64(k)))
	}
	link := SurveyHost + "/s/closed?tid={ID}"
	var projects, campaigns [][]any
	for c := first; c < first+k; c++ {
		b, name := m.BuyerOf(c).ID, fmt.Sprintf("Bench closed study %d", c)
		status := int16(4) // archived
		if c%10 == 0 {
			status = 6 // reconciled
		}
		i := c - first
		projects = append(projects, []any{c, b, name, at(i - open/2)})
		campaigns = append(campaigns, []any{c, b, c, name, int32(150), int32(150), int32(10), int32(40), status, int32(15),
			link, int32(1), []int16{0, 1, 2}, at(i - open/2), at(i + open/2)})
	}
	for _, t := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"projects", []string{"id", "buyer_id", "name", "created_at"}, projects},
		{"campaigns", []string{"id", "buyer_id", "project_id", "name", "cpi_cents", "cpi_bid_cents", "days_in_field",
			"incidence", "status", "length_of_interview", "supplier_link", "country_language_id", "supported_devices",
			"created_at", "status_changed_at"}, campaigns},
	} {
		c, err := tx.CopyFrom(ctx, pgx.Identifier{t.table}, t.cols, pgx.CopyFromRows(t.rows))
		rows[t.table] += c
		if err != nil {
			return fmt.Errorf("copy closed %s: %w", t.table, err)
		}
	}
	if err := partitionSessions(ctx, tx, n, m.partitionIDs()); err != nil {
		return err
	}
	var random [16]byte
	np := int64(m.panel)
	id := int64(0)
	c, err := tx.CopyFrom(ctx, pgx.Identifier{"sessions"},
		[]string{"id", "tid", "campaign_id", "buyer_id", "publisher_id", "participant_id", "entered_at", "outcome", "outcome_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if id >= n {
				return nil, nil
			}
			id++
			// Campaigns in field around this session's time: a window of pastOpen that moves
			// through the closed campaigns as time goes on.
			camp := first + min(max((id-1)*k/n+r.Int64N(open)-open/2, 0), k-1)
			for i := range random {
				random[i] = byte(r.Uint32())
			}
			tid := persistence.SessionTID(hex.EncodeToString(random[:]), id)
			at := start.Add(time.Duration(id) * step)
			return []any{id, tid, camp, m.BuyerOf(camp).ID, m.Publisher.ID, r.Int64N(max(np, 1)) + 1,
				at, outcomes[r.IntN(len(outcomes))], at.Add(15 * time.Minute)}, nil
		}))
	rows["sessions"] += c
	if err != nil {
		return fmt.Errorf("copy past sessions: %w", err)
	}
	_, err = tx.Exec(ctx, `SELECT setval('sessions_id_seq', $1)`, n)
	return err
}
