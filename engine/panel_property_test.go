package engine_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// refPanel is the panel as it was before packing (one immutable
// *Participant per participant, copy-on-write), kept as the reference the
// packed panel must agree with.
type refPanel struct {
	byKey map[refKey]*refRecord
	byID  map[int64]*refRecord
}

type refKey struct {
	publisher int64
	user      string
}

type refRecord struct {
	p        *engine.Participant
	last     int64
	day      int64
	days     uint32
	anything bool
}

func (rp *refPanel) upsert(pub int64, user string, prof engine.Participant, at int64) {
	k := refKey{pub, user}
	rec := rp.byKey[k]
	if rec == nil {
		rec = &refRecord{p: &engine.Participant{ID: prof.ID}}
		rp.byKey[k] = rec
		rp.byID[prof.ID] = rec
	}
	old := rec.p
	n := &engine.Participant{ID: old.ID, CountryID: prof.CountryID, Device: prof.Device,
		DeviceID: old.DeviceID, DeviceIDHash: old.DeviceIDHash, Entries: old.Entries}
	for _, a := range old.Answers {
		if !slices.ContainsFunc(prof.Answers, func(u engine.Answer) bool { return u.QuestionID == a.QuestionID }) {
			n.Answers = append(n.Answers, a)
		}
	}
	for _, u := range prof.Answers {
		u.Text = engine.NormalizeText(u.Text)
		u.Codes = slices.Clone(u.Codes)
		n.Answers = append(n.Answers, u)
	}
	slices.SortStableFunc(n.Answers, func(a, b engine.Answer) int { return int(a.QuestionID) - int(b.QuestionID) })
	if prof.DeviceID != "" && prof.DeviceID != old.DeviceID {
		n.DeviceID, n.DeviceIDHash = prof.DeviceID, engine.HashDeviceID(prof.DeviceID)
	}
	for _, e := range prof.Entries {
		n.Entries = refWithEntry(n.Entries, e)
	}
	rec.p = n
	rec.touch(at)
	for _, e := range prof.Entries { // entries are activity (RecordEntry)
		rec.touch(e.At)
	}
}

func refWithEntry(entries []engine.Entry, e engine.Entry) []engine.Entry {
	out := slices.Clone(entries)
	for i := range out {
		if out[i].CampaignID == e.CampaignID {
			out[i].At = max(out[i].At, e.At)
			return out
		}
	}
	out = append(out, e)
	slices.SortFunc(out, func(a, b engine.Entry) int { return int(a.CampaignID - b.CampaignID) })
	return out
}

// touch is the old activityCell: the latest activity and a bitmap of the
// last 32 UTC days.
func (rec *refRecord) touch(at int64) {
	rec.last = max(rec.last, at)
	d := at / 86400
	switch {
	case !rec.anything:
		rec.day, rec.days, rec.anything = d, 1, true
	case d > rec.day:
		if d-rec.day >= 32 {
			rec.days = 0
		} else {
			rec.days <<= uint(d - rec.day)
		}
		rec.day, rec.days = d, rec.days|1
	case rec.day-d < 32:
		rec.days |= 1 << uint(rec.day-d)
	}
}

// panelProfile draws a profile over the property test's small universe,
// sometimes with long answers (so that an update no longer fits in place)
// and sometimes with none.
func panelProfile(r *rand.Rand, id int64) engine.Participant {
	p := engine.Participant{ID: id, CountryID: 1 + r.Int32N(2), Device: 1 << r.IntN(3)}
	if r.IntN(3) == 0 {
		p.DeviceID = propDevices[r.IntN(len(propDevices))]
	}
	for _, q := range append(slices.Clone(propQuestions), 700+r.Int32N(3), 70000) {
		if r.IntN(3) == 0 {
			continue
		}
		a := engine.Answer{QuestionID: q}
		switch {
		case q == engine.QuestionZip:
			a.Text = propZips[r.IntN(len(propZips))]
			if r.IntN(3) == 0 {
				a.Text = " " + strings.ToLower(a.Text) + " "
			}
		case q == engine.QuestionAge:
			a.Codes = []int32{18 + r.Int32N(6)}
		case r.IntN(4) == 0: // long multi-select: does not fit in place
			for c := int32(1); c <= 4+r.Int32N(40); c++ {
				a.Codes = append(a.Codes, c*37)
			}
		default:
			a.Codes = []int32{1 + r.Int32N(4)}
			if r.IntN(8) == 0 {
				a.Text = "free text"
			}
		}
		p.Answers = append(p.Answers, a)
	}
	r.Shuffle(len(p.Answers), func(i, j int) { p.Answers[i], p.Answers[j] = p.Answers[j], p.Answers[i] })
	if r.IntN(4) == 0 {
		p.Entries = append(p.Entries, engine.Entry{CampaignID: 1 + r.Int64N(30), At: propNow - r.Int64N(3600)})
	}
	return p
}

func sameParticipant(t *testing.T, what string, got, want *engine.Participant) {
	t.Helper()
	if got.ID != want.ID || got.CountryID != want.CountryID || got.Device != want.Device ||
		got.DeviceID != want.DeviceID || got.DeviceIDHash != want.DeviceIDHash ||
		!slices.Equal(got.Entries, want.Entries) || len(got.Answers) != len(want.Answers) {
		t.Fatalf("%s: got %+v\nwant %+v", what, *got, *want)
	}
	for i, a := range want.Answers {
		g := got.Answers[i]
		if g.QuestionID != a.QuestionID || g.Text != a.Text || !slices.Equal(g.Codes, a.Codes) {
			t.Fatalf("%s: answer %d = %+v, want %+v", what, i, g, a)
		}
	}
}

// TestPackedPanelAgreesWithReference applies random impanels (new and
// updates in place or not), entries, activity, Reserve and Trim to the packed panel and to
// the old representation, and checks that every participant reads back the
// same and that the engine answers every question (Match, Eligible, quota
// conditions through both) identically for both.
func TestPackedPanelAgreesWithReference(t *testing.T) {
	defer engine.SetPanelCompactMin(256)()
	r := rand.New(rand.NewPCG(14, 1))
	var nextQuota int64
	cs := propMarket(r, 1, 30, &nextQuota)
	ctr := engine.NewCounters()
	propCounters(r, ctr, cs)
	e := engine.New(ctr)
	e.Load(cs)

	pl := engine.NewPanel()
	ref := &refPanel{byKey: map[refKey]*refRecord{}, byID: map[int64]*refRecord{}}
	users := []string{"a", "b", "c", "user-with-a-longer-identifier", "é", ""}
	var nextID int64
	var dst, byIDDst engine.Participant // reused from one decode to the next, as the serving paths do
	var gotOffers, wantOffers []engine.Offer
	for round := range 300 {
		switch round % 50 {
		case 0: // sizing up front (as the start-up does), sometimes below what the panel holds
			pl.Reserve(r.IntN(8000))
		case 25: // and returning what was not used, with garbage in the arenas
			pl.Trim()
		}
		for range 40 {
			pub, user := 1+r.Int64N(3), users[r.IntN(len(users))]+string(rune('a'+r.IntN(8)))
			at := propNow - r.Int64N(40*86400)
			switch r.IntN(5) {
			case 0, 1:
				id := int64(0)
				if ref.byKey[refKey{pub, user}] == nil {
					nextID++
					id = nextID
				}
				prof := panelProfile(r, id)
				if _, err := pl.Upsert(pub, user, prof, at); err != nil {
					t.Fatal(err)
				}
				ref.upsert(pub, user, prof, at)
			case 2:
				id, campaign := 1+r.Int64N(nextID+2), 1+r.Int64N(30)
				rec := ref.byID[id]
				if got := pl.RecordEntry(id, campaign, at); got != (rec != nil) {
					t.Fatalf("RecordEntry(%d) = %v", id, got)
				}
				if rec != nil {
					n := *rec.p
					n.Entries = refWithEntry(n.Entries, engine.Entry{CampaignID: campaign, At: at})
					rec.p = &n
					rec.touch(at)
				}
			case 4: // a batch, as the start-up load records them
				rows := make([]engine.EntryRow, r.IntN(12))
				known := 0
				for i := range rows {
					rows[i] = engine.EntryRow{Participant: 1 + r.Int64N(nextID+2), Campaign: 1 + r.Int64N(30), At: propNow - r.Int64N(40*86400)}
					if rec := ref.byID[rows[i].Participant]; rec != nil {
						known++
						n := *rec.p
						n.Entries = refWithEntry(n.Entries, engine.Entry{CampaignID: rows[i].Campaign, At: rows[i].At})
						rec.p = &n
						rec.touch(rows[i].At)
					}
				}
				if got := pl.RecordEntries(rows); got != known {
					t.Fatalf("RecordEntries = %d, want %d", got, known)
				}
			case 3:
				id := 1 + r.Int64N(nextID+2)
				rec := ref.byID[id]
				if rec != nil && r.IntN(2) == 0 { // the offers answer's form: the row Lookup found
					var looked engine.Participant
					if !pl.LookupByID(id, &looked) || !pl.TouchDecoded(&looked, at) {
						t.Fatalf("LookupByID then TouchDecoded(%d) = false", id)
					}
				} else if got := pl.Touch(id, at); got != (rec != nil) {
					t.Fatalf("Touch(%d) = %v", id, got)
				}
				if rec != nil {
					rec.touch(at)
				}
			}
		}
		if pl.Len() != len(ref.byID) {
			t.Fatalf("Len %d, want %d", pl.Len(), len(ref.byID))
		}
		for k, rec := range ref.byKey {
			want := rec.p
			if !pl.Lookup(k.publisher, k.user, &dst) {
				t.Fatalf("round %d: %v missing", round, k)
			}
			sameParticipant(t, "Lookup", &dst, want)
			byID, ok := pl.GetByID(want.ID)
			if !ok {
				t.Fatalf("GetByID(%d) missing", want.ID)
			}
			sameParticipant(t, "GetByID", byID, want)
			if !pl.LookupByID(want.ID, &byIDDst) {
				t.Fatalf("LookupByID(%d) missing", want.ID)
			}
			sameParticipant(t, "LookupByID", &byIDDst, want)
			a, _ := pl.Activity(want.ID)
			if a.LastActive != rec.last || a.ActiveDays(propNow, 30) != (engine.Activity{LastActive: rec.last, Day: rec.day, Days: rec.days}).ActiveDays(propNow, 30) {
				t.Fatalf("activity of %d: %+v, want last %d day %d days %b", want.ID, a, rec.last, rec.day, rec.days)
			}
			share := 0.5 + r.Float64()/2
			gotOffers = e.Match(&dst, share, propNow, 0, gotOffers)
			wantOffers = e.Match(want, share, propNow, 0, wantOffers)
			if !sameOffers(gotOffers, wantOffers) {
				t.Fatalf("Match differs for %d: %v, want %v", want.ID, ids(gotOffers), ids(wantOffers))
			}
			c := &cs[r.IntN(len(cs))]
			g, gok := e.Eligible(&dst, c.ID, propNow, nil)
			w, wok := e.Eligible(want, c.ID, propNow, nil)
			if gok != wok || !slices.Equal(g, w) {
				t.Fatalf("Eligible(%d, %d) = %v %v, want %v %v", want.ID, c.ID, g, gok, w, wok)
			}
			for _, q := range c.Quotas {
				if refQuotaMatches(q, &dst) != refQuotaMatches(q, want) {
					t.Fatalf("quota %d differs for %d", q.ID, want.ID)
				}
			}
		}
		seen := 0
		pl.Range(func(p *engine.Participant, a engine.Activity) bool {
			seen++
			rec := ref.byID[p.ID]
			if rec == nil {
				t.Fatalf("Range: unknown %d", p.ID)
			}
			sameParticipant(t, "Range", p, rec.p)
			return true
		})
		if seen != len(ref.byID) {
			t.Fatalf("Range saw %d of %d", seen, len(ref.byID))
		}
	}
}

// TestPanelGrows loads enough participants to grow every shard's key table
// and id index several times (or, reserved, to fill and then trim them),
// then finds each by key and by id.
func TestPanelGrows(t *testing.T) {
	for _, reserve := range []int{0, 20_000, 5_000, 200_000} {
		t.Run(strconv.Itoa(reserve), func(t *testing.T) { testPanelGrows(t, reserve) })
	}
}

func testPanelGrows(t *testing.T, reserve int) {
	pl := engine.NewPanel()
	pl.Reserve(reserve)
	const n = 20_000
	user := func(i int) string { return "u" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune(i)) }
	for i := range n {
		err := pl.Put(int64(i%3), user(i), engine.Participant{ID: int64(i)*7919 + 1, CountryID: int32(i % 9),
			Answers: []engine.Answer{{QuestionID: engine.QuestionAge, Codes: []int32{int32(i % 90)}}}}, propNow)
		if err != nil {
			t.Fatal(err)
		}
	}
	var p engine.Participant
	for i := range n {
		if !pl.Lookup(int64(i%3), user(i), &p) || p.ID != int64(i)*7919+1 || p.Answers[0].Codes[0] != int32(i%90) {
			t.Fatalf("participant %d: %+v", i, p)
		}
		if q, ok := pl.GetByID(p.ID); !ok || q.CountryID != int32(i%9) {
			t.Fatalf("GetByID %d", p.ID)
		}
	}
	if pl.Len() != n {
		t.Fatalf("Len %d", pl.Len())
	}
	pl.Trim()
	for i := range n {
		if !pl.Lookup(int64(i%3), user(i), &p) || p.ID != int64(i)*7919+1 || p.Answers[0].Codes[0] != int32(i%90) {
			t.Fatalf("after Trim, participant %d: %+v", i, p)
		}
		if q, ok := pl.GetByID(p.ID); !ok || q.CountryID != int32(i%9) {
			t.Fatalf("after Trim, GetByID %d", p.ID)
		}
	}
	if _, ok := pl.Get(3, user(0)); ok {
		t.Fatal("found under another publisher")
	}
}

// RecordEntries leaves a panel exactly as RecordEntry row by row does (entries, versions,
// activity), whatever the rows: unknown participants, repeated ones, batches larger than
// one pass of the bulk form, rows into shards in any order.
func TestRecordEntriesAgreesWithRecordEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ participants, rows int }{{1, 50}, {30, 200}, {500, 9000}, {3000, 5000}} {
		one, bulk := engine.NewPanel(), engine.NewPanel()
		for id := int64(1); id <= int64(tc.participants); id++ {
			prof, at := panelProfile(r, id), propNow-r.Int64N(86400)
			for _, pl := range []*engine.Panel{one, bulk} {
				if err := pl.Put(1+id%3, "u"+strconv.FormatInt(id, 10), prof, at); err != nil {
					t.Fatal(err)
				}
			}
		}
		for round := range 3 {
			rows := make([]engine.EntryRow, tc.rows)
			known := 0
			for i := range rows {
				rows[i] = engine.EntryRow{Participant: 1 + r.Int64N(int64(tc.participants)+5),
					Campaign: 1 + r.Int64N(1<<r.IntN(20)), At: propNow - r.Int64N(1<<r.IntN(26))}
				if one.RecordEntry(rows[i].Participant, rows[i].Campaign, rows[i].At) {
					known++
				}
			}
			if got := bulk.RecordEntries(rows); got != known {
				t.Fatalf("%+v round %d: RecordEntries = %d, want %d", tc, round, got, known)
			}
			for id := int64(1); id <= int64(tc.participants); id++ {
				a, _ := one.GetByID(id)
				b, _ := bulk.GetByID(id)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%+v round %d: participant %d\nbulk %+v\nwant %+v", tc, round, id, b, a)
				}
				aa, _ := one.Activity(id)
				ba, _ := bulk.Activity(id)
				if aa != ba {
					t.Fatalf("%+v round %d: activity of %d: %+v, want %+v", tc, round, id, ba, aa)
				}
			}
		}
	}
}
