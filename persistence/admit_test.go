package persistence

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestDecideBatch: entries of one batch are decided in order, each against the counts and
// entries the ones before it left (the rules of admitChecksSQL, applied within the batch).
func TestDecideBatch(t *testing.T) {
	ptr := func(v int32) pgtype.Int4 { return pgtype.Int4{Int32: v, Valid: true} }
	newState := func(n int) *admitState {
		return &admitState{
			quotas: map[int64]*admitQuota{
				10: {campaignID: 1, num: 3},                              // non-global, 3 places
				11: {campaignID: 1, num: 100, global: true},              // global cap
				12: {campaignID: 1, num: 1, completes: 1},                // full, matched beside 10
				20: {campaignID: 2, num: 2, clickBalanced: true},         // click-balanced
				30: {campaignID: 3, num: 5, completes: 4, inProgress: 1}, // full
			},
			camps: map[int64]*admitCampaign{
				1: {buyerID: 7, status: 2, reentry: ptr(0)},
				2: {buyerID: 7, status: 2, reentry: pgtype.Int4{}},
				3: {buyerID: 8, status: 2, reentry: ptr(0)},
				4: {buyerID: 8, status: 5, reentry: ptr(0)},
			},
			facts:   make([]admitFacts, n),
			related: map[[2]int64]bool{{1, 2}: true, {2, 1}: true},
		}
	}
	// One scratch decides every batch below, as a writer's batches share theirs: nothing of
	// a batch may leak into the next.
	scratch := newAdmitScratch()
	entry := func(tid string, c, p int64, q ...int64) Entry {
		return Entry{TID: tid, CampaignID: c, ParticipantID: p, PublisherID: 1, QuotaIDs: q, RespondentID: "R" + tid}
	}

	// Exact fill inside a batch: 3 places, 5 entries; the global quota counts every admitted
	// one, and so does a full quota that also matched (docs/rules.md §5: a complete counts toward
	// every quota that matched at entry), without letting in anyone it alone would admit.
	es := []Entry{entry("a", 1, 1, 10, 11, 12), entry("b", 1, 2, 10, 11), entry("c", 1, 3, 11, 10),
		entry("d", 1, 4, 10, 11), entry("e", 1, 5, 10, 11), entry("e2", 1, 6, 12, 11)}
	st := newState(len(es))
	out, w := decideBatch(es, st, scratch)
	var refused []string
	for _, a := range out {
		refused = append(refused, a.Refused)
	}
	if !slices.Equal(refused, []string{"", "", "", RefusedQuota, RefusedQuota, RefusedQuota}) {
		t.Fatalf("verdicts %q", refused)
	}
	if !slices.Equal(out[2].QuotaIDs, []int64{10, 11}) || st.quotas[10].entries != 3 || st.quotas[10].inProgress != 3 || st.quotas[11].entries != 3 {
		t.Fatalf("counts: %v %+v %+v", out[2].QuotaIDs, *st.quotas[10], *st.quotas[11])
	}
	if !slices.Equal(out[0].QuotaIDs, []int64{10, 11, 12}) || st.quotas[12].entries != 1 || st.quotas[12].inProgress != 1 {
		t.Fatalf("full matched quota: %v %+v", out[0].QuotaIDs, *st.quotas[12])
	}
	if len(w.tid) != 3 || len(w.qID) != 3 || len(w.rBuyer) != 3 {
		t.Fatalf("write: %+v", w)
	}

	// Reentry (nil interval: never again), relationships and respondents inside a batch;
	// status, full quotas, other campaigns' quotas and stored facts.
	es = []Entry{
		entry("f", 2, 9, 20), // admitted
		entry("g", 2, 9, 20), // reentry within the batch
		entry("h", 1, 9, 10), // related to campaign 2, entered in this batch
		entry("i", 3, 9, 30), // full
		entry("j", 4, 9, 30), // not active
		entry("k", 1, 8, 20), // quota 20 belongs to campaign 2: no matched quota
		entry("l", 2, 8, 20), // admitted (fills the click-balanced quota)
		entry("m", 2, 6, 20), // click-balanced quota full
		entry("n", 1, 5, 10), // stored exclusion
	}
	st = newState(len(es))
	st.facts[6].respondent = "STORED"
	st.facts[8].excluded = true
	out, w = decideBatch(es, st, scratch)
	refused = refused[:0]
	for _, a := range out {
		refused = append(refused, a.Refused)
	}
	want := []string{"", RefusedReentry, RefusedRelated, RefusedQuota, RefusedStatus, RefusedQuota, "", RefusedQuota, RefusedExcluded}
	if !slices.Equal(refused, want) {
		t.Fatalf("verdicts %q, want %q", refused, want)
	}
	if !slices.Equal(w.rid, []string{"", "STORED"}) || !slices.Equal(w.rPart, []int64{9}) {
		t.Fatalf("respondents: rid %q, inserted for %v", w.rid, w.rPart)
	}
	if st.quotas[20].entries != 2 {
		t.Fatalf("click-balanced entries %d", st.quotas[20].entries)
	}

	// One offer entered twice (docs/rules.md §6): a stored session in progress is resumed
	// before any rule (its quota is full and reentry is never allowed in campaign 2), a
	// second entry of an offer admitted in this batch resumes that entry, and neither counts.
	offer := func(tid string, c, p, nonce int64, q ...int64) Entry {
		e := entry(tid, c, p, q...)
		e.OfferNonce = nonce
		return e
	}
	es = []Entry{
		offer("o", 2, 9, 77, 20),    // stored session S1 of offer 77 in progress: resumed
		offer("p", 3, 9, 78, 30),    // full, no stored session: refused
		offer("q", 1, 9, 79, 10),    // admitted
		offer("r", 1, 9, 79, 10),    // the same offer again in this batch: resumes q
		offer("s", 1, 9, 80, 10),    // another offer: a second entry (reentry 0)
		offer("t", 1, 9, 0, 10, 11), // no offer nonce: never resumes
	}
	st = newState(len(es))
	st.facts[0].resume = Admission{TID: "S1", RespondentID: "RS", QuotaIDs: []int64{20}}
	out, w = decideBatch(es, st, scratch)
	type verdict struct {
		refused, tid string
		resumed      bool
	}
	var got []verdict
	for _, a := range out {
		got = append(got, verdict{a.Refused, a.TID, a.Resumed})
	}
	wantV := []verdict{{"", "S1", true}, {RefusedQuota, "", false}, {"", "q", false}, {"", "q", true}, {"", "s", false}, {"", "t", false}}
	if !slices.Equal(got, wantV) {
		t.Fatalf("verdicts %v, want %v", got, wantV)
	}
	if out[0].RespondentID != "RS" || st.quotas[20].entries != 0 || st.quotas[10].entries != 3 {
		t.Fatalf("resumed: respondent %q, quota 20 entries %d, quota 10 entries %d", out[0].RespondentID,
			st.quotas[20].entries, st.quotas[10].entries)
	}
	if !slices.Equal(w.tid, []string{"q", "s", "t"}) || !slices.Equal(w.nonce, []int64{79, 80, 0}) {
		t.Fatalf("stored %q with nonces %v", w.tid, w.nonce)
	}
}
