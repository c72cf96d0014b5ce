package engine_test

import (
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

func TestPanelUpsertMerges(t *testing.T) {
	pl := engine.NewPanel()
	if _, err := pl.Upsert(1, "u", engine.Participant{}, ruleNow); err != engine.ErrNoParticipantID {
		t.Fatalf("new participant without id: %v", err)
	}
	_, err := pl.Upsert(1, "u", engine.Participant{ID: 5, CountryID: 1, DeviceID: "abc", Answers: []engine.Answer{
		{QuestionID: engine.QuestionZip, Text: " sw1a 1aa"},
		{QuestionID: engine.QuestionAge, Codes: []int32{30}},
	}}, ruleNow)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := pl.Get(1, "u")
	p, err := pl.Upsert(1, "u", engine.Participant{CountryID: 1, Answers: []engine.Answer{
		{QuestionID: engine.QuestionGender, Codes: []int32{2}},
		{QuestionID: engine.QuestionAge, Codes: []int32{31}},
	}}, ruleNow+10)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != 5 || p.DeviceID != "abc" || p.DeviceIDHash != engine.HashDeviceID("abc") {
		t.Fatalf("identity lost: %+v", p)
	}
	want := []engine.Answer{
		{QuestionID: engine.QuestionAge, Codes: []int32{31}},
		{QuestionID: engine.QuestionGender, Codes: []int32{2}},
		{QuestionID: engine.QuestionZip, Text: "SW1A1AA"},
	}
	if len(p.Answers) != len(want) {
		t.Fatalf("answers %+v", p.Answers)
	}
	for i := range want {
		if p.Answers[i].QuestionID != want[i].QuestionID || p.Answers[i].Text != want[i].Text ||
			len(p.Answers[i].Codes) != len(want[i].Codes) || (len(want[i].Codes) > 0 && p.Answers[i].Codes[0] != want[i].Codes[0]) {
			t.Fatalf("answer %d = %+v, want %+v", i, p.Answers[i], want[i])
		}
	}
	if first.Answers[0].Codes[0] != 30 {
		t.Fatal("an update modified the earlier copy")
	}
	if _, ok := pl.Get(2, "u"); ok {
		t.Fatal("the publisher is part of the key")
	}
	// The panel hands out copies: equal content, not the same pointer.
	if got, ok := pl.GetByID(5); !ok || !reflect.DeepEqual(got, p) {
		t.Fatalf("GetByID = %+v, want %+v", got, p)
	}
	if pl.Len() != 1 {
		t.Fatalf("Len %d", pl.Len())
	}
}

func TestPanelEntriesAndActivity(t *testing.T) {
	pl := engine.NewPanel()
	pl.Upsert(1, "u", engine.Participant{ID: 5, CountryID: 1}, ruleNow-40*86400)
	before, _ := pl.GetByID(5)
	for _, e := range []engine.Entry{{30, ruleNow - 86400}, {10, ruleNow - 2*86400}, {30, ruleNow}, {20, ruleNow - 5*86400}, {10, ruleNow - 3*86400}} {
		if !pl.RecordEntry(5, e.CampaignID, e.At) {
			t.Fatal("RecordEntry on a known participant")
		}
	}
	p, _ := pl.GetByID(5)
	want := []engine.Entry{{10, ruleNow - 2*86400}, {20, ruleNow - 5*86400}, {30, ruleNow}}
	if len(p.Entries) != 3 || p.Entries[0] != want[0] || p.Entries[1] != want[1] || p.Entries[2] != want[2] {
		t.Fatalf("entries %v, want %v", p.Entries, want)
	}
	if len(before.Entries) != 0 {
		t.Fatal("copy-on-write broken")
	}
	if pl.RecordEntry(6, 1, ruleNow) {
		t.Fatal("RecordEntry on an unknown participant")
	}
	a, _ := pl.Activity(5)
	if a.LastActive != ruleNow {
		t.Fatalf("LastActive %d", a.LastActive)
	}
	// Active on days now, −1, −2, −3, −5 (−40 is outside the bitmap).
	if got := a.ActiveDays(ruleNow, 30); got != 5 {
		t.Fatalf("ActiveDays = %d, want 5", got)
	}
	if got := a.ActiveDays(ruleNow+2*86400, 3); got != 1 { // window: days +2, +1, 0
		t.Fatalf("ActiveDays shifted = %d, want 1", got)
	}
	n := 0
	pl.Range(func(p *engine.Participant, a engine.Activity) bool { n++; return true })
	if n != 1 {
		t.Fatalf("Range saw %d", n)
	}
}

func TestPanelConcurrent(t *testing.T) {
	pl := engine.NewPanel()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := int64(i%50 + 1)
				pl.Upsert(int64(i%2), string(rune('a'+i%50)), engine.Participant{ID: id + int64(i%2)*1000, CountryID: 1}, ruleNow)
				if w%2 == 0 {
					pl.RecordEntry(id, int64(w*1000+i), ruleNow+int64(i))
				} else { // the bulk form, alongside Touch and Activity on the same rows
					pl.RecordEntries([]engine.EntryRow{{Participant: id, Campaign: int64(w*1000 + i), At: ruleNow + int64(i)}, {Participant: 99_999, Campaign: 1, At: ruleNow}})
				}
				pl.Touch(id, ruleNow+int64(i))
				pl.Activity(id)
				pl.Get(0, "a")
				pl.Range(func(*engine.Participant, engine.Activity) bool { return false })
				pl.RangeActivity(func(int64, engine.Activity) bool { return true })
			}
		}()
	}
	wg.Wait()
	p, _ := pl.GetByID(1)
	if len(p.Entries) != 8*4 { // ids 1 gets i = 0, 50, 100, 150 from each writer
		t.Fatalf("entries lost: %d", len(p.Entries))
	}
}

// TestPanelLookupAllocs: decoding a participant (answers, entries, device id) into a value
// decoded into before allocates nothing, by key (the offers) and by id (the entries).
func TestPanelLookupAllocs(t *testing.T) {
	pl := engine.NewPanel()
	pl.Upsert(3, "u", engine.Participant{ID: 9, CountryID: 1, DeviceID: "device-9", Answers: []engine.Answer{
		{QuestionID: engine.QuestionAge, Codes: []int32{31}}, {QuestionID: 7, Codes: []int32{1, 4}},
		{QuestionID: engine.QuestionZip, Text: "SW1A1AA"}}}, ruleNow)
	pl.RecordEntry(9, 30, ruleNow)
	var p engine.Participant
	for name, lookup := range map[string]func() bool{
		"Lookup":     func() bool { return pl.Lookup(3, "u", &p) },
		"LookupByID": func() bool { return pl.LookupByID(9, &p) },
	} {
		if !lookup() || p.ID != 9 || p.DeviceID != "device-9" || len(p.Answers) != 3 || len(p.Entries) != 1 {
			t.Fatalf("%s decoded %+v", name, p)
		}
		if n := testing.AllocsPerRun(100, func() { lookup() }); n != 0 {
			t.Errorf("%s: %v allocations per decode", name, n)
		}
	}
	if pl.LookupByID(10, &p) {
		t.Fatal("LookupByID found an unknown id")
	}
}

// TestTouchDecoded: TouchDecoded touches the participant its argument was decoded as;
// one decoded by another panel is touched there by id, never at the row the first panel
// found (which, with the same key in both panels, holds another participant).
func TestTouchDecoded(t *testing.T) {
	a, b := engine.NewPanel(), engine.NewPanel()
	put := func(pl *engine.Panel, user string, id int64) {
		t.Helper()
		if _, err := pl.Upsert(1, user, engine.Participant{ID: id, CountryID: 1}, ruleNow); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "u", 7)
	// b's rows (a shard and a row in it) are all taken by others than 7, a's row of 7
	// among them, the first row of each shard.
	for i := range int64(1000) {
		put(b, "w"+strconv.FormatInt(i, 10), 1000+i)
	}
	put(b, "v", 7)
	last := func(pl *engine.Panel, id int64) int64 {
		act, ok := pl.Activity(id)
		if !ok {
			t.Fatalf("%d missing", id)
		}
		return act.LastActive
	}
	var p engine.Participant
	if !a.Lookup(1, "u", &p) || p.ID != 7 {
		t.Fatalf("Lookup: %+v", p)
	}
	if !a.TouchDecoded(&p, ruleNow+60) || last(a, 7) != ruleNow+60 {
		t.Fatalf("on its panel: last active %d, want %d", last(a, 7), ruleNow+60)
	}
	if !b.TouchDecoded(&p, ruleNow+120) || last(b, 7) != ruleNow+120 {
		t.Fatalf("on another panel: last active %d, want %d", last(b, 7), ruleNow+120)
	}
	for id := int64(1000); id < 2000; id++ {
		if last(b, id) != ruleNow {
			t.Fatalf("on another panel, %d was touched in place of 7", id)
		}
	}
	fresh := engine.Participant{ID: 7} // never decoded: touched by id
	if !a.TouchDecoded(&fresh, ruleNow+180) || last(a, 7) != ruleNow+180 {
		t.Fatalf("by id: last active %d, want %d", last(a, 7), ruleNow+180)
	}
	if (&engine.Panel{}).TouchDecoded(&engine.Participant{ID: 99}, ruleNow) {
		t.Fatal("an unknown participant was touched")
	}
}

// TestPanelUserOf: a participant's publisher and user identifier by id, as impaneled and
// after its row is rewritten with a longer profile (its record moves in the arena); none
// for an id the panel does not hold.
func TestPanelUserOf(t *testing.T) {
	pl := engine.NewPanel()
	for i, u := range []string{"alice", "bob-the-second", "c"} {
		if _, err := pl.Upsert(int64(10+i), u, engine.Participant{ID: int64(100 + i), CountryID: 1}, ruleNow); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, id, wantPub int64, wantUser string) {
		t.Helper()
		pub, user, ok := pl.UserOf(id)
		if !ok || pub != wantPub || user != wantUser {
			t.Errorf("%s: UserOf(%d) = %d %q %v, want %d %q", step, id, pub, user, ok, wantPub, wantUser)
		}
	}
	check("impaneled", 101, 11, "bob-the-second")
	if _, err := pl.Upsert(11, "bob-the-second", engine.Participant{CountryID: 1, DeviceID: "a-device", Answers: []engine.Answer{
		{QuestionID: engine.QuestionZip, Text: "90210"}, {QuestionID: engine.QuestionAge, Codes: []int32{41}},
	}}, ruleNow+1); err != nil {
		t.Fatal(err)
	}
	check("rewritten", 101, 11, "bob-the-second")
	check("another", 102, 12, "c")
	if _, _, ok := pl.UserOf(999); ok {
		t.Error("UserOf(999) found a participant the panel does not hold")
	}
}

// TestRangeActivity: every participant once, with the activity Activity reads, across the
// chunks a shard is copied in (64 shards of about 470 rows here), and nothing after fn
// returns false.
func TestRangeActivity(t *testing.T) {
	pl := engine.NewPanel()
	const n = 30_000
	for i := range n {
		id := int64(i)*7 + 3
		if _, err := pl.Upsert(1, "u"+strconv.Itoa(i), engine.Participant{ID: id, CountryID: 1}, ruleNow); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			pl.Touch(id, ruleNow+int64(i))
		}
	}
	seen := map[int64]engine.Activity{}
	pl.RangeActivity(func(id int64, a engine.Activity) bool {
		if _, dup := seen[id]; dup {
			t.Fatalf("%d seen twice", id)
		}
		seen[id] = a
		return true
	})
	if len(seen) != n {
		t.Fatalf("saw %d of %d", len(seen), n)
	}
	for id, a := range seen {
		if want, _ := pl.Activity(id); a != want {
			t.Fatalf("%d: %+v, want %+v", id, a, want)
		}
	}
	calls := 0
	pl.RangeActivity(func(int64, engine.Activity) bool { calls++; return false })
	if calls != 1 {
		t.Fatalf("%d calls after the first returned false", calls)
	}
}
