package persistence

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// Re-routing of screen-outs (docs/rules.md §10). A chain is a row of reroute_chains; each of
// its sessions carries chain_id and chain_hop (1 = the offer entry), stored in the
// transaction that admits the session. A hop after the first is admitted in the same
// transaction as the outcome that causes it (ContinueChain), and the chain's one partner
// postback in the same transaction as the outcome that ends the chain, so a crash at any
// point leaves either the outcome with its consequence or neither.

// Reasons a chain ends, as stored in reroute_chains.end_reason and counted in metrics.
const (
	ChainEndComplete    = "complete"     // its last session completed
	ChainEndQualityTerm = "quality_term" // its last session ended quality_term
	ChainEndExhausted   = "exhausted"    // no re-routing attempt left
	ChainEndExpired     = "expired"      // older than ChainMaxAge
	ChainEndNoSurvey    = "no_survey"    // no other eligible survey admitted the participant
)

// ChainMaxAge is how long a chain may continue after its start (docs/rules.md §10).
const ChainMaxAge = 60 * time.Minute

// ChainLink is what an Entry needs to be a hop of a chain.
type ChainLink struct {
	ID  int64 // the chain; 0: this entry starts a new one
	Hop int   // the session's place in the chain, 1 for a new chain
	// For a new chain: the offer's device, and the continuations already used (1 when the
	// offer's own entry was refused and this entry is where it was re-routed to).
	DeviceType int
	DeviceID   string
	Reroutes   int
	// Tried are the campaigns this step tried (this entry's included), added to the chain's.
	Tried []int64
}

// newChainSQL starts a chain with the admitted session $1 as its hop 1 ($8, $9: the id
// block its tid names, so that only the partitions holding it are read).
const newChainSQL = `WITH c AS (
	INSERT INTO reroute_chains (publisher_id, participant_id, device_type, device_id, reroutes, tried)
	VALUES ($2, $3, $4, $5, $6, $7::bigint[]) RETURNING id
) UPDATE sessions SET chain_id = (SELECT id FROM c), chain_hop = 1 WHERE tid = $1 AND id >= $8 AND id < $9 RETURNING chain_id`

// nextHopSQL makes the admitted session $1 hop $4 of chain $2, one more continuation used
// ($5, $6: the id block its tid names).
const nextHopSQL = `WITH c AS (
	UPDATE reroute_chains SET reroutes = reroutes + 1, tried = tried || $3::bigint[] WHERE id = $2 RETURNING id
) UPDATE sessions SET chain_id = (SELECT id FROM c), chain_hop = $4 WHERE tid = $1 AND id >= $5 AND id < $6 RETURNING chain_id`

// queueChains adds to b, inside the admission's transaction, the chain rows of the
// admitted entries of es that are hops of a chain; nothing when none is.
func queueChains(b *pgx.Batch, es []Entry, out []Admission, w *admitWrite) {
	for i := range es {
		e := &es[i]
		if e.Chain == nil || out[i].Refused != "" {
			continue
		}
		if _, ok := w.index[e.TID]; !ok {
			continue
		}
		c, a := e.Chain, &out[i]
		tried := c.Tried
		if tried == nil {
			tried = []int64{}
		}
		scan := func(row pgx.Row) error { return row.Scan(&a.ChainID) }
		lo, hi := tidRange(e.TID)
		if c.ID == 0 {
			b.Queue(newChainSQL, e.TID, e.PublisherID, e.ParticipantID, int16(c.DeviceType), c.DeviceID, int16(c.Reroutes), tried, lo, hi).QueryRow(scan)
		} else {
			b.Queue(nextHopSQL, e.TID, c.ID, tried, int16(c.Hop), lo, hi).QueryRow(scan)
		}
	}
}

// Chain is a stored re-routing chain.
type Chain struct {
	ID            int64
	PublisherID   int64
	ParticipantID int64
	DeviceType    int
	DeviceID      string
	StartedAt     time.Time
	Reroutes      int     // continuations used
	Tried         []int64 // campaigns tried
	EndReason     string  // "" while it goes on
}

// ChainByID loads a chain; an unknown id is fault.NotFound.
func (db *SessionStore) ChainByID(ctx context.Context, id int64) (Chain, error) {
	var c Chain
	var dev, reroutes int16
	err := db.Pool.QueryRow(ctx, `SELECT id, publisher_id, participant_id, device_type, device_id, started_at, reroutes,
		tried, COALESCE(end_reason, '') FROM reroute_chains WHERE id = $1`, id).
		Scan(&c.ID, &c.PublisherID, &c.ParticipantID, &dev, &c.DeviceID, &c.StartedAt, &reroutes, &c.Tried, &c.EndReason)
	c.DeviceType, c.Reroutes = int(dev), int(reroutes)
	return c, classify(err)
}

// ChainHop is a session of a chain as a replayed callback needs it to send the respondent
// to the same next hop again.
type ChainHop struct {
	TID          string
	CampaignID   int64
	RespondentID string
}

// ChainHopByNumber returns hop hop of chain id; found is false when the chain has no such hop
// (it ended before).
func (db *SessionStore) ChainHopByNumber(ctx context.Context, id int64, hop int) (h ChainHop, found bool, err error) {
	err = db.Pool.QueryRow(ctx, `SELECT tid, campaign_id, respondent_id FROM sessions WHERE chain_id = $1 AND chain_hop = $2`,
		id, int16(hop)).Scan(&h.TID, &h.CampaignID, &h.RespondentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ChainHop{}, false, nil
	}
	return h, err == nil, classify(err)
}

// ChainStep is a callback of a chain's session: its outcome and what follows it.
type ChainStep struct {
	Session Session
	// Outcome is the session's outcome. Its Postback is the chain's final one: stored (with
	// PostbackLease as in RecordOutcome) only when the chain ends here.
	Outcome OutcomeRecord
	// Candidates are the next hops to try, best first (each with Chain set to the next hop
	// of Session's chain); the first admitted continues the chain. None: the chain ends.
	Candidates []Entry
	// EndReason is why the chain ends when no candidate is admitted (ChainEnd*).
	EndReason string
}

// ChainStepResult is what recording a ChainStep did.
type ChainStepResult struct {
	OutcomeResult // as RecordOutcome; Postback only when the chain ended here
	// Next is the index of the admitted candidate, -1 when the chain ended; Admission its
	// verdict.
	Next      int
	Admission Admission
	// EndReason is why the chain ended ("" when it goes on).
	EndReason string
	// Refused are the arbiter's reasons (Refused*) for the candidates it refused, in order.
	Refused []string
}

// ContinueChain records the outcome of a chain's session and, in the same transaction,
// admits the first candidate the admission rules let in (the same decision as Admit, every
// rule of docs/rules.md §5 applied) or, when none is admitted, ends the chain and stores its
// final postback. When an earlier callback had decided the session nothing is stored and the
// result carries the stored session (its answer is a replay). Deadlocks and serialization
// failures are retried.
func (db *SessionStore) ContinueChain(ctx context.Context, st ChainStep) (ChainStepResult, error) {
	// Each candidate's Tried covers the candidates refused before it in this step.
	for i := range st.Candidates {
		c := *st.Candidates[i].Chain
		c.Tried = make([]int64, 0, i+1)
		for _, e := range st.Candidates[:i+1] {
			c.Tried = append(c.Tried, e.CampaignID)
		}
		st.Candidates[i].Chain = &c
	}
	var res ChainStepResult
	for round := 1; ; round++ {
		err := retry(ctx, func() error {
			var err error
			res, err = db.continueChain(ctx, &st)
			return err
		})
		if err != nil {
			return ChainStepResult{}, classify(err)
		}
		if res.Decided {
			break
		}
		stored, err := scanSession(db.Pool.QueryRow(ctx, `SELECT `+sessionColumns+sessionFrom+` WHERE s.id = $1`, st.Session.ID))
		if err != nil || !lateComplete(stored, st.Outcome) {
			return ChainStepResult{OutcomeResult: OutcomeResult{Stored: stored}, Next: -1}, classify(err)
		}
		if round == lateRounds { // released after each statement's snapshot: recordLateOutcomeSQL
			return ChainStepResult{}, fault.Unavailable(errLateUndecided)
		}
	}
	var err error
	if res.Next >= 0 {
		res.Admission, err = db.fillRespondent(ctx, res.Admission)
	}
	return res, err
}

// continueChain is one attempt of ContinueChain's step, on a connection of its own.
func (db *SessionStore) continueChain(ctx context.Context, st *ChainStep) (ChainStepResult, error) {
	res := ChainStepResult{Next: -1}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Release()
	c := conn.Conn()
	if err := stepChain(ctx, c, st, &res); err != nil {
		rollbackOpen(ctx, c)
		return ChainStepResult{Next: -1}, err
	}
	return res, nil
}

// stepChain runs a chain's step in one transaction on c: the session's outcome, then
// (when this step decided it) the first candidate admitted or, none admitted, the chain's
// end. It leaves the transaction open only when it fails.
func stepChain(ctx context.Context, c *pgx.Conn, st *ChainStep, res *ChainStepResult) error {
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		return err
	}
	if err := recordChainOutcome(ctx, c, st, res); err != nil {
		return err
	}
	if !res.Decided {
		_, err := c.Exec(ctx, "ROLLBACK")
		return err
	}
	s := admitScratches.Get().(*admitScratch)
	defer s.release()
	if err := admitCandidate(ctx, c, st, res, s); err != nil {
		return err
	}
	if res.Next < 0 {
		if err := endChain(ctx, c, st, res); err != nil {
			return err
		}
	}
	_, err := c.Exec(ctx, "COMMIT")
	return err
}

// recordChainOutcome records the outcome of the chain's session, first: its row lock makes
// a concurrent callback of the same session wait, then find the outcome decided and answer
// as a replay. The statement that decides a late complete too (docs/rules.md §5), for one
// session. res.Decided says whether this step decided it.
func recordChainOutcome(ctx context.Context, c *pgx.Conn, st *ChainStep, res *ChainStepResult) error {
	o := st.Outcome
	rows, err := c.Query(ctx, recordLateOutcomeSQL, []int64{st.Session.ID}, []string{o.Outcome}, []time.Time{o.At},
		[]int64{o.PayoutUSD}, []int64{o.Reward}, []string{""}, []int64{0}, []string{""}, []int64{0}, PostbackChannel,
		[]int64{st.Session.CPICents}, []bool{false})
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, pbID, moved, notified int64
		var created time.Time
		if err := rows.Scan(&id, &res.Held, &res.Overage, &pbID, &created, &moved, &notified); err != nil {
			rows.Close()
			return err
		}
		res.Decided = id == st.Session.ID
	}
	rows.Close()
	return rows.Err()
}

// admitCandidate admits the first of the step's candidates the admission rules let in
// (res.Next, res.Admission), with s's room, and lists the refusals before it.
func admitCandidate(ctx context.Context, c *pgx.Conn, st *ChainStep, res *ChainStepResult, s *admitScratch) error {
	for i := range st.Candidates {
		if err := admitOn(ctx, c, st.Candidates[i:i+1], false, s); err != nil {
			return err
		}
		if a := s.out[0]; a.Refused == "" {
			res.Next, res.Admission = i, a
			break
		}
		res.Refused = append(res.Refused, s.out[0].Refused)
	}
	return nil
}

// endChain ends the chain, no candidate admitted, and stores what its partner is told of
// its last session: the ledger event and the final postback.
func endChain(ctx context.Context, c *pgx.Conn, st *ChainStep, res *ChainStepResult) error {
	o := st.Outcome
	res.EndReason = st.EndReason
	if res.EndReason == "" {
		res.EndReason = ChainEndNoSurvey
	}
	if _, err := c.Exec(ctx, `UPDATE reroute_chains SET ended_at = now(), end_reason = $2 WHERE id = $1 AND ended_at IS NULL`,
		st.Session.ChainID, res.EndReason); err != nil {
		return err
	}
	// The chain's last session is the one its partner is told of: its ledger event
	// (the chain's other sessions earn the partner nothing).
	if _, err := c.Exec(ctx, chainLedgerSQL, st.Session.ID, OutcomeEventSeq, st.Session.CPICents, o.PayoutUSD, o.Reward); err != nil {
		return err
	}
	if pb := o.Postback; pb.URL != "" {
		lease := o.PostbackLease.Microseconds()
		var id int64
		var created time.Time
		var attempts int
		err := c.QueryRow(ctx, `INSERT INTO postback_outbox (tid, kind, publisher_id, url, attempts, next_attempt_at, event_id)
					VALUES ($1, $2, $3, $4, CASE WHEN $5::bigint > 0 THEN 1 ELSE 0 END, now() + GREATEST($5::bigint, 0) * interval '1 microsecond', $6)
					ON CONFLICT (event_id) WHERE event_id IS NOT NULL DO NOTHING RETURNING id, created_at, attempts`,
			pb.TID, pb.Kind, pb.PublisherID, pb.URL, lease, EventID(pb.TID, OutcomeEventSeq)).Scan(&id, &created, &attempts)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case attempts == 0:
			if _, err := c.Exec(ctx, `SELECT pg_notify($1, '')`, PostbackChannel); err != nil {
				return err
			}
		default:
			res.Postback = ClaimedPostback{ID: id, TID: pb.TID, Kind: pb.Kind, PublisherID: pb.PublisherID,
				URL: pb.URL, Attempts: 1, CreatedAt: created}
		}
	}
	return nil
}
