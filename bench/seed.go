package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/persistence"
)

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

// copyMarket writes m with COPY in one transaction: the active campaigns and what hangs off
// them, the panel, the sessions (the closed campaigns' past ones, and with history the
// market's own month), the exclusions, and the id sequences past what was written.
func copyMarket(ctx context.Context, tx pgx.Tx, m *Market, history bool, now time.Time, rows map[string]int64) error {
	r := rand.New(rand.NewPCG(42, 43))
	if err := bulkLoadSettings(ctx, tx); err != nil {
		return err
	}
	mr := buildMarketRows(m, r, now)
	if err := mr.copyCampaigns(ctx, tx, rows); err != nil {
		return err
	}
	entries, err := copyParticipants(ctx, tx, m, now, rows)
	if err != nil {
		return err
	}
	if history || m.PastSessions > 0 {
		if err := copySessions(ctx, tx, m, history, now, r, entries, rows); err != nil {
			return err
		}
	}
	if err := copyRows(ctx, tx, rows, "campaign_exclusions", []string{"campaign_id", "participant_id"}, mr.excl); err != nil {
		return err
	}
	for _, s := range []string{"projects", "campaigns", "campaign_quotas", "participants"} {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%s', 'id'), GREATEST((SELECT max(id) FROM %s), 1))`, s, s)); err != nil {
			return err
		}
	}
	return nil
}

// bulkLoadSettings sets the transaction up for the copy.
func bulkLoadSettings(ctx context.Context, tx pgx.Tx) error {
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
	return nil
}

// copyRows copies src into the columns cols of table and counts them in rows.
func copyRows(ctx context.Context, tx pgx.Tx, rows map[string]int64, table string, cols []string, src [][]any) error {
	n, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(src))
	rows[table] += n
	if err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	return nil
}

// marketRows are the rows of the active campaigns' tables, built campaign by campaign.
type marketRows struct {
	projects, campaigns, quotas, quals, rels, rets, excl [][]any
}

// buildMarketRows builds the rows of m's active campaigns, filling m.Room; r draws what synth
// left open (days in field, the quotas' seeded completes).
func buildMarketRows(m *Market, r *rand.Rand, now time.Time) *marketRows {
	m.Room = make([]int32, len(m.Campaigns))
	// The active campaigns were created before their month of history (synth draws entries
	// over the last 30 days): a campaign's sessions never precede it.
	created := now.Add(-31 * 24 * time.Hour)
	mr := &marketRows{}
	for i := range m.Campaigns {
		c := &m.Campaigns[i]
		b := m.buyer(c.BuyerID).ID
		name := fmt.Sprintf("Bench study %d", c.ID)
		mr.projects = append(mr.projects, []any{c.ID, b, name})
		mr.campaigns = append(mr.campaigns, campaignRow(c, b, name, m.Links[i], int32(5+r.IntN(25)), created))
		m.Room[i] = mr.addQuotas(c, r)
		for _, o := range c.Related {
			if o < c.ID {
				mr.rels = append(mr.rels, []any{b, c.ID, o})
			}
		}
		mr.addRetargets(c, now)
		mr.addExclusions(c, int64(m.panel))
	}
	return mr
}

// campaignRow is the campaigns row of c, owned by buyer b.
func campaignRow(c *engine.Campaign, b int64, name, link string, daysInField int32, created time.Time) []any {
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
	return []any{c.ID, b, c.ID, name, int32(c.CPICents), int32(c.CPICents), daysInField,
		int32(c.Incidence), int16(engine.StatusActive), int32(c.LOI), link, daily, reentry, int32(1),
		len(c.Retargets) > 0, devices, created}
}

// addQuotas adds c's quotas with their seeded completes (and entries) and qualifications,
// and returns c's room: the least room left in any of its quotas.
func (mr *marketRows) addQuotas(c *engine.Campaign, r *rand.Rand) int32 {
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
		mr.quotas = append(mr.quotas, []any{q.ID, c.ID, fmt.Sprintf("Quota %d", q.ID), int32(q.NumRespondents), q.ClickBalanced,
			q.Global, int32(completes), int32(completes + completes/2)})
		for _, cond := range q.Conditions {
			codes, texts := cond.Codes, cond.Texts
			if codes == nil {
				codes = []int32{}
			}
			if texts == nil {
				texts = []string{}
			}
			mr.quals = append(mr.quals, []any{q.ID, refQuestion(cond.QuestionID), codes, texts})
		}
	}
	return max(room, 0)
}

// addRetargets adds c's retargeting entries, each (kind, identifier) once.
func (mr *marketRows) addRetargets(c *engine.Campaign, now time.Time) {
	seen := map[string]bool{}
	for _, t := range c.Retargets {
		ident, pid := t.Value, any(nil)
		switch t.Kind {
		case engine.RetargetTransaction:
			ident, pid = fmt.Sprintf("BT%d", t.ParticipantID), t.ParticipantID
		case engine.RetargetRespondent:
			ident, pid = fmt.Sprintf("BR%d", t.ParticipantID), t.ParticipantID
		}
		key := strconv.Itoa(int(t.Kind)) + ident
		if seen[key] {
			continue
		}
		seen[key] = true
		mr.rets = append(mr.rets, []any{c.ID, int16(t.Kind), ident, pid, shift(now, t.ExpiresAt)})
	}
}

// addExclusions adds c's excluded participants, each once, within the panel of np.
func (mr *marketRows) addExclusions(c *engine.Campaign, np int64) {
	seen := map[int64]bool{}
	for _, pid := range c.ExcludedParticipants {
		// synth draws excluded ids up to 1,000,000; the table references participants.
		pid = (pid-1)%max(np, 1) + 1
		if np > 0 && !seen[pid] {
			seen[pid] = true
			mr.excl = append(mr.excl, []any{c.ID, pid})
		}
	}
}

// copyCampaigns copies the campaigns' rows but the exclusions (written after the sessions),
// and lets them go.
func (mr *marketRows) copyCampaigns(ctx context.Context, tx pgx.Tx, rows map[string]int64) error {
	for _, t := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"projects", []string{"id", "buyer_id", "name"}, mr.projects},
		{"campaigns", []string{"id", "buyer_id", "project_id", "name", "cpi_cents", "cpi_bid_cents", "days_in_field",
			"incidence", "status", "length_of_interview", "supplier_link", "max_daily_completes", "reentry_interval",
			"country_language_id", "is_retarget", "supported_devices", "created_at"}, mr.campaigns},
		{"campaign_quotas", []string{"id", "campaign_id", "name", "num_respondents", "is_click_balanced", "is_global",
			"completes", "entries"}, mr.quotas},
		{"quota_qualifications", []string{"quota_id", "question_id", "pre_codes", "text_values"}, mr.quals},
		{"campaign_relationships", []string{"buyer_id", "campaign_id", "related_campaign_id"}, mr.rels},
		{"campaign_retargets", []string{"campaign_id", "retargeting_type", "identifier", "participant_id", "expires_at"}, mr.rets},
	} {
		if err := copyRows(ctx, tx, rows, t.table, t.cols, t.rows); err != nil {
			return err
		}
	}
	mr.projects, mr.campaigns, mr.quotas, mr.quals, mr.rels, mr.rets = nil, nil, nil, nil, nil, nil
	return nil
}

// copyParticipants copies the panel, generated as it is streamed (CopyFromFunc) so that ten
// million are never held, keeping in m.Participants what the load needs of each; it returns
// the sessions of their history (generated again from the same seed when they are written).
func copyParticipants(ctx context.Context, tx pgx.Tx, m *Market, now time.Time, rows map[string]int64) (int, error) {
	stream := synth.NewParticipantStream(m.panelSeed, len(m.Campaigns))
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
		return 0, fmt.Errorf("copy participants: %w", err)
	}
	return entries, nil
}
