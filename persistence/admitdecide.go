package persistence

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// admitQuota is a locked quota row as the batch's decisions move it.
type admitQuota struct {
	campaignID                          int64
	global, clickBalanced               bool
	num, entries, completes, inProgress int64
}

func (q *admitQuota) full() bool {
	if q.clickBalanced {
		return q.entries >= q.num
	}
	return q.completes+max(q.inProgress, 0) >= q.num
}

type admitCampaign struct {
	buyerID      int64
	status       int16
	maxDaily     pgtype.Int4 // not Valid: no daily cap
	reentry      pgtype.Int4 // not Valid: no reentry ever; 0: no limit; n: not within n minutes
	dayCompletes int64
}

// admitFacts are what stored rows say about one entry.
type admitFacts struct {
	excluded, reentry, related bool
	respondent                 string
	resumeID                   int64     // the session the entry may resume (admitChecksSQL), 0: none
	resume                     Admission // the offer's session in progress (TID "" when none)
}

// admitState is what decideBatch needs: locked quotas, campaigns, per-entry facts and the
// relationships (loaded only when a participant appears twice in the batch).
type admitState struct {
	quotas  map[int64]*admitQuota
	camps   map[int64]*admitCampaign
	facts   []admitFacts
	related map[[2]int64]bool // {a, b}: a and b are related (both orders stored)
	ids     []int64           // session ids drawn for the batch, taken in order by admitted entries
}

// admitWrite is what a batch stores.
type admitWrite struct {
	rBuyer, rPart          []int64
	rID                    []string
	qID                    []int64
	qN                     []int32
	tid                    []string
	camp, buyer, pub, part []int64
	dev, quotas, rid       []string
	nonce, id              []int64
	index                  map[string]int // tid → entry
}

// reset empties w for a batch, keeping what its slices and index have grown to.
func (w *admitWrite) reset() {
	w.rBuyer, w.rPart, w.rID, w.qID, w.qN = w.rBuyer[:0], w.rPart[:0], w.rID[:0], w.qID[:0], w.qN[:0]
	w.tid, w.camp, w.buyer, w.pub, w.part = w.tid[:0], w.camp[:0], w.buyer[:0], w.pub[:0], w.part[:0]
	w.dev, w.quotas, w.rid, w.nonce, w.id = w.dev[:0], w.quotas[:0], w.rid[:0], w.nonce[:0], w.id[:0]
	if w.index == nil {
		w.index = map[string]int{}
	}
	clear(w.index)
}

// admitScratch is one batch's working set: the state its reads fill, the maps and slices
// its decisions use, the rows it scans into and what it writes. A batch takes one from
// admitScratches and gives it back when its verdicts are copied out, so that the entries'
// batches, thousands a second, leave the collector little to do (the maps and slices keep
// what they grew to; only what outlives the batch is allocated).
type admitScratch struct {
	es  []Entry     // the batch's entries, for callers that gather them (EntryWriter)
	out []Admission // the verdicts: valid until the scratch is given back
	st  admitState
	w   admitWrite

	// admitOn's reads.
	qids, cids, camps, parts, nonces []int64
	seen                             map[int64]bool
	quotaRows                        []admitQuota
	campRows                         []admitCampaign
	ids                              []int64
	check                            admitCheckRow
	checkArgs                        []any
	lock                             admitLockRow
	lockArgs                         []any
	at                               time.Time
	rid                              string
	writtenArgs                      []any

	// decideBatch's.
	deltas     map[int64]int32
	entered    []admitted // participant and campaign of each entry admitted so far
	pending    map[[2]int64]bool
	known      map[[2]int64]string
	matched    []*admitQuota
	matchedIDs []int64
}

// admitted is an entry admitted earlier in the batch: its participant, campaign, offer
// nonce and index.
type admitted struct {
	p, c, nonce int64
	i           int
}

// admitCheckRow is a row of admitChecksSQL.
type admitCheckRow struct {
	i    int32
	camp admitCampaign
	f    admitFacts
}

// admitLockRow is a row of admitLockSQL.
type admitLockRow struct {
	id                                  int64
	q                                   admitQuota
	num, entries, completes, inProgress int32
}

// admitScratches keeps batches' scratch for the next batches.
var admitScratches = sync.Pool{New: func() any { return newAdmitScratch() }}

func newAdmitScratch() *admitScratch {
	s := &admitScratch{seen: map[int64]bool{}, deltas: map[int64]int32{}, pending: map[[2]int64]bool{}, known: map[[2]int64]string{},
		st: admitState{quotas: map[int64]*admitQuota{}, camps: map[int64]*admitCampaign{}, related: map[[2]int64]bool{}}}
	s.w.reset()
	c, l := &s.check, &s.lock
	s.checkArgs = []any{&c.i, &c.camp.buyerID, &c.camp.status, &c.camp.maxDaily, &c.camp.reentry, &c.camp.dayCompletes,
		&c.f.excluded, &c.f.reentry, &c.f.related, &c.f.respondent, &c.f.resumeID}
	s.lockArgs = []any{&l.id, &l.q.campaignID, &l.q.global, &l.q.clickBalanced, &l.num, &l.entries, &l.completes, &l.inProgress}
	s.writtenArgs = []any{nil, &s.at, &s.rid} // tid is looked up from the row's raw value
	return s
}

// release gives s back for another batch; its verdicts are no longer valid.
func (s *admitScratch) release() {
	clear(s.es) // the entries' strings and quota ids are the requests'
	s.es = s.es[:0]
	admitScratches.Put(s)
}

// decideBatch decides es in order against st (which it moves) and returns the verdicts
// and what to store, both in s (valid until s is reused). An admitted entry takes the next
// of st.ids as its session's id, and its TID becomes the tid naming that id (SessionTID).
func decideBatch(es []Entry, st *admitState, s *admitScratch) ([]Admission, *admitWrite) {
	s.out = slices.Grow(s.out[:0], len(es))[:len(es)]
	out := s.out
	clear(out)
	w := &s.w
	w.reset()
	clear(s.deltas)
	clear(s.pending)
	clear(s.known)
	s.entered = s.entered[:0]
	// The quota ids each admitted entry counts toward outlive the batch (Admission.QuotaIDs):
	// one array holds the batch's.
	total := 0
	for i := range es {
		total += len(es[i].QuotaIDs)
	}
	quotaIDs := make([]int64, 0, total)
	for i := range es {
		e := &es[i]
		c := st.camps[e.CampaignID]
		if c == nil || c.status != 2 {
			out[i].Refused = RefusedStatus
			continue
		}
		s.matchQuotas(e, st)
		f := st.facts[i]
		if f.resume.TID != "" {
			out[i] = f.resume
			out[i].Resumed = true
			continue
		}
		if s.resumeInBatch(es, i) {
			continue // its respondent and time are the first's, once stored
		}
		if out[i].Refused = s.refusal(e, c, &f, st); out[i].Refused != "" {
			continue
		}
		quotaIDs = s.admit(es, i, c, &f, st, quotaIDs)
	}
	for id, n := range s.deltas {
		w.qID, w.qN = append(w.qID, id), append(w.qN, n)
	}
	return out, w
}

// matchQuotas sets s.matched and s.matchedIDs to the distinct quotas of e's campaign among
// those the engine found matching it.
func (s *admitScratch) matchQuotas(e *Entry, st *admitState) {
	s.matched, s.matchedIDs = s.matched[:0], s.matchedIDs[:0]
	for _, id := range e.QuotaIDs {
		if q := st.quotas[id]; q != nil && q.campaignID == e.CampaignID && !slices.Contains(s.matchedIDs, id) {
			s.matched, s.matchedIDs = append(s.matched, q), append(s.matchedIDs, id)
		}
	}
}

// resumeInBatch reports whether es[i] comes from the offer of an entry admitted earlier in
// the batch, and if so answers it with that entry's session.
func (s *admitScratch) resumeInBatch(es []Entry, i int) bool {
	e := &es[i]
	if e.OfferNonce == 0 {
		return false
	}
	k := slices.IndexFunc(s.entered, func(a admitted) bool {
		return a.p == e.ParticipantID && a.c == e.CampaignID && a.nonce == e.OfferNonce
	})
	if k < 0 {
		return false
	}
	first := s.entered[k].i
	s.out[i] = Admission{TID: es[first].TID, Resumed: true, QuotaIDs: s.out[first].QuotaIDs}
	return true
}

// refusal is the reason the rules refuse e into its campaign c, given its stored facts f,
// its matched quotas (s.matched) and the entries admitted before it; "" admits it.
func (s *admitScratch) refusal(e *Entry, c *admitCampaign, f *admitFacts, st *admitState) string {
	open, globalFull := false, false
	for _, q := range s.matched {
		full := q.full()
		open = open || (!q.global && !full)
		globalFull = globalFull || (q.global && full)
	}
	switch {
	case !open || globalFull:
		return RefusedQuota
	case c.maxDaily.Valid && c.dayCompletes >= int64(c.maxDaily.Int32):
		return RefusedDaily
	case f.excluded:
		return RefusedExcluded
	case f.reentry || ((!c.reentry.Valid || c.reentry.Int32 > 0) && slices.ContainsFunc(s.entered, func(a admitted) bool {
		return a.p == e.ParticipantID && a.c == e.CampaignID
	})):
		return RefusedReentry
	case f.related || slices.ContainsFunc(s.entered, func(a admitted) bool {
		return a.p == e.ParticipantID && st.related[[2]int64{e.CampaignID, a.c}]
	}):
		return RefusedRelated
	}
	return ""
}

// admit admits es[i] into its campaign c: counts it on every quota it matched (against the
// entries after it), gives it the next session id and adds it, with its first respondent id
// when it needs one, to what the batch stores. quotaIDs holds the batch's counted quota
// ids; admit returns it grown by the entry's.
func (s *admitScratch) admit(es []Entry, i int, c *admitCampaign, f *admitFacts, st *admitState, quotaIDs []int64) []int64 {
	e, out, w := &es[i], s.out, &s.w
	n := len(quotaIDs)
	quotaIDs = append(quotaIDs, s.matchedIDs...)
	counted := quotaIDs[n:len(quotaIDs):len(quotaIDs)]
	for _, id := range counted {
		q := st.quotas[id]
		q.entries++
		q.inProgress++
		s.deltas[id]++
	}
	slices.Sort(counted)
	var id int64
	if len(st.ids) > 0 {
		id, st.ids = st.ids[0], st.ids[1:]
		e.TID = SessionTID(e.TID, id)
	}
	out[i].QuotaIDs, out[i].TID = counted, e.TID
	s.entered = append(s.entered, admitted{p: e.ParticipantID, c: e.CampaignID, nonce: e.OfferNonce, i: i})
	key := [2]int64{c.buyerID, e.ParticipantID}
	rid := f.respondent
	if rid == "" {
		rid = s.known[key]
	}
	if rid == "" && !s.pending[key] {
		s.pending[key] = true
		w.rBuyer, w.rPart, w.rID = append(w.rBuyer, c.buyerID), append(w.rPart, e.ParticipantID), append(w.rID, e.RespondentID)
	}
	if rid != "" {
		s.known[key] = rid
	}
	w.index[e.TID] = i
	w.tid, w.camp, w.buyer, w.pub, w.part = append(w.tid, e.TID), append(w.camp, e.CampaignID), append(w.buyer, c.buyerID),
		append(w.pub, e.PublisherID), append(w.part, e.ParticipantID)
	w.dev, w.quotas, w.rid = append(w.dev, e.DeviceID), append(w.quotas, int64sLiteral(counted)), append(w.rid, rid)
	w.nonce, w.id = append(w.nonce, e.OfferNonce), append(w.id, id)
	return quotaIDs
}

// int64sLiteral is ids as a PostgreSQL array literal.
func int64sLiteral(ids []int64) string {
	b := make([]byte, 0, 2+len(ids)*8)
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}
