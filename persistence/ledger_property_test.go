package persistence_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

var ledgerSequences = flag.Int("ledger.sequences", 200, "random sequences TestLedgerProperty runs")

// modelSession is the in-test model of a session's money (docs/payouts.md, "Ledger"),
// written from the payout and reversal rules, not from the ledger's code.
type modelSession struct {
	tid             string
	outcome         string
	rejected        bool
	payout          int64 // what the partner was last told for the session's complete or outcome
	charged, earned int64 // buyer, partner: the sums the ledger must hold
}

// TestLedgerProperty runs random sequences of callbacks, rejections and reconciles against
// a real database, each on its own campaign of three sessions, and checks the ledger's sums
// per session against the model, and CheckLedger at 0 differences.
func TestLedgerProperty(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "property@example.test")
	pub := newPublisher(t, db)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d sequences", seed, *ledgerSequences)
	rng := rand.New(rand.NewPCG(seed, 1))
	outcomes := []string{"complete", "over_quota", "disqualified", "quality_term"}
	timePay := map[string]int64{"complete": 0, "over_quota": 150, "disqualified": 75, "quality_term": 0}
	for seq := 0; seq < *ledgerSequences; seq++ {
		camp, quota := newActiveCampaign(t, db, buyer, fmt.Sprint("p", seq), nil)
		var cpi int64
		if err := db.Pool.QueryRow(ctx, `SELECT cpi_cents FROM campaigns WHERE id = $1`, camp).Scan(&cpi); err != nil {
			t.Fatal(err)
		}
		complete := cpi * 50 // cpi × revenue share 0.5, in ten-thousandths of a USD
		ms := make([]*modelSession, 3)
		for i := range ms {
			ms[i] = &modelSession{tid: randomTID()}
			if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, quota_ids, entered_at)
				VALUES ($1, $2, $3, $4, ARRAY[$5::bigint], now())`, ms[i].tid, camp, buyer, pub, quota); err != nil {
				t.Fatal(err)
			}
		}
		reconciled := false
		accept := func(s persistence.Session, _ persistence.Publisher, _ string) (persistence.Accepted, bool, error) {
			return persistence.Accepted{PayoutUSD: complete, Reward: complete / 100}, true, nil
		}
		reject := func(m *modelSession) {
			if m.outcome == "complete" && !m.rejected {
				m.rejected, m.charged, m.earned = true, m.charged-cpi*100, m.earned-m.payout
			}
		}
		var ops []string
		for range 3 + rng.IntN(8) {
			m := ms[rng.IntN(len(ms))]
			switch r := rng.IntN(10); {
			case r < 5: // a callback
				o := outcomes[rng.IntN(len(outcomes))]
				pay := timePay[o]
				if o == "complete" {
					pay = complete
				}
				s, err := db.Sessions.SessionByTID(ctx, m.tid)
				if err != nil {
					t.Fatal(err)
				}
				res, err := db.Sessions.RecordOutcome(ctx, s, persistence.OutcomeRecord{Outcome: o, At: time.Now(), PayoutUSD: pay, Reward: pay / 100})
				if err != nil {
					t.Fatal(err)
				}
				if want := m.outcome == "" && !reconciled; res.Decided != want {
					t.Fatalf("sequence %d %v: callback %s decided %v, want %v", seq, ops, o, res.Decided, want)
				}
				if res.Decided {
					m.outcome, m.payout, m.earned = o, pay, m.earned+pay
					if o == "complete" {
						m.charged += cpi * 100
					}
				}
				ops = append(ops, "callback "+o)
			case r < 7:
				if _, err := db.Sessions.RejectCompletes(ctx, buyer, camp, []string{m.tid}, persistence.RejectEffects{}); err != nil {
					t.Fatal(err)
				}
				reject(m)
				ops = append(ops, "reject")
			default:
				var listed []string
				in := map[*modelSession]bool{}
				for _, o := range ms {
					if rng.IntN(2) == 0 {
						listed, in[o] = append(listed, o.tid), true
					}
				}
				if _, err := db.Sessions.Reconcile(ctx, buyer, camp, listed, nil, accept, persistence.RejectEffects{}); err != nil {
					t.Fatal(err)
				}
				for _, o := range ms {
					switch {
					case in[o] && (o.outcome != "complete" || o.rejected):
						o.outcome, o.rejected, o.payout = "complete", false, complete
						o.charged, o.earned = o.charged+cpi*100, o.earned+complete
					case !in[o]:
						reject(o)
					}
				}
				reconciled = true
				ops = append(ops, fmt.Sprintf("reconcile %d", len(listed)))
			}
		}
		for i, m := range ms {
			var charged, earned int64
			if err := db.Pool.QueryRow(ctx, `SELECT COALESCE(sum(charge_usd), 0)::bigint, COALESCE(sum(earning_usd), 0)::bigint
				FROM ledger_events WHERE tid = $1`, m.tid).Scan(&charged, &earned); err != nil {
				t.Fatal(err)
			}
			if charged != m.charged || earned != m.earned {
				t.Fatalf("sequence %d %v, session %d: ledger charges %d earns %d; the model %d and %d", seq, ops, i, charged, earned, m.charged, m.earned)
			}
		}
	}
	c, err := db.Ledger.CheckLedger(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Differences {
		t.Errorf("ledger check: %+v", d)
	}
}
