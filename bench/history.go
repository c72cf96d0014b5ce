package bench

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/internal/outcome"
)

// copySessions writes the sessions: the closed campaigns' past ones, and with history the
// market's own month (entries of them, drawn with r), then what a serving database keeps
// beside them: participations, the partitions' time ranges and the sweeper's marks.
func copySessions(ctx context.Context, tx pgx.Tx, m *Market, history bool, now time.Time, r *rand.Rand, entries int, rows map[string]int64) error {
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
