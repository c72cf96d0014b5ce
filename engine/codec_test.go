package engine

import (
	"reflect"
	"slices"
	"testing"
)

func codecCampaigns() []Campaign {
	return []Campaign{
		{ID: 7, BuyerID: 3, CountryID: 1, Status: StatusActive, CPICents: 150, LOI: 12, Incidence: 40,
			Devices: DeviceMobile | DeviceDesktop, MaxDailyCompletes: 25, ReentryMinutes: ReentryNever,
			DaysInField: 9, FieldStart: 1_700_000_000,
			Quotas: []Quota{
				{ID: 70, NumRespondents: 100, Global: true},
				{ID: 71, NumRespondents: 50, ClickBalanced: true, Conditions: []Condition{
					{QuestionID: QuestionAge, Codes: []int32{18, 19, 20}},
					{QuestionID: QuestionZip, Texts: []string{"10001", "SW1A 1AA"}},
				}},
			},
			Related:              []int64{8, 9},
			Retargets:            []Retarget{{Kind: RetargetDevice, Value: "dev-1", ExpiresAt: 1_800_000_000}, {Kind: RetargetTransaction, ParticipantID: -4}},
			ExcludedParticipants: []int64{11, 12},
			ExcludedSuppliers:    []int64{2},
		},
		{ID: 8, Status: StatusActive, ReentryMinutes: 30},
	}
}

// TestCampaignCodecRoundTrip: a campaign decodes to what it was, whether its texts were
// given as a list or held packed as a snapshot holds them.
func TestCampaignCodecRoundTrip(t *testing.T) {
	for _, c := range codecCampaigns() {
		for _, in := range []Campaign{c, ownCampaign(&c)} {
			b := AppendCampaign([]byte{0xee}, &in)
			got, rest, err := DecodeCampaign(b[1:])
			if err != nil || len(rest) != 0 {
				t.Fatalf("campaign %d: %v, %d bytes left", c.ID, err, len(rest))
			}
			own := ownCampaign(&c)
			want := unpackedCampaign(&own) // texts normalized, as indexed
			if !reflect.DeepEqual(unpackedCampaign(&got), want) {
				t.Fatalf("campaign %d:\n got %+v\nwant %+v", c.ID, *unpackedCampaign(&got), *want)
			}
			for cut := range len(b) - 1 { // every truncation fails cleanly
				if _, _, err := DecodeCampaign(b[1 : 1+cut]); err == nil {
					t.Fatalf("campaign %d cut at %d decoded", c.ID, cut)
				}
			}
		}
	}
}

// TestPanelRecordsRestore: a panel ranged to records and restored into an empty one holds
// the same participants, entry histories and activity.
func TestPanelRecordsRestore(t *testing.T) {
	const day = 86400
	now := int64(1_765_000_000)
	src := NewPanel()
	for i := int64(1); i <= 300; i++ {
		p := Participant{ID: i, CountryID: int32(1 + i%3), Device: DeviceMobile,
			Answers: []Answer{{QuestionID: QuestionAge, Codes: []int32{int32(18 + i%50)}}, {QuestionID: QuestionZip, Text: "1000" + string(rune('0'+i%10))}},
			Entries: []Entry{{CampaignID: i % 7, At: now - i*60}}}
		if i%4 == 0 {
			p.DeviceID = "dev-" + string(rune('a'+i%26))
		}
		if err := src.Put(1+i%2, "user-"+string(rune('a'+i%26))+string(rune('a'+i/26)), p, now-i%5*day); err != nil {
			t.Fatal(err)
		}
		src.Touch(i, now-(i%3)*day)
		src.RecordEntry(i, 100+i%3, now-i)
	}
	var buf []byte
	n := 0
	src.RangeRecords(func(rec *PanelRecord) bool {
		buf = AppendPanelRecord(buf, rec)
		n++
		return true
	})
	dst := NewPanel()
	var rec PanelRecord
	for rest := buf; len(rest) > 0; {
		var err error
		if rest, err = DecodePanelRecord(rest, &rec); err != nil {
			t.Fatal(err)
		}
		if err := dst.Restore(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if dst.Len() != src.Len() || n != src.Len() {
		t.Fatalf("restored %d of %d (ranged %d)", dst.Len(), src.Len(), n)
	}
	assertPanelsEqual(t, src, dst)
}

// assertPanelsEqual fails unless both panels hold the same rows (key, profile, entries,
// activity); a row's Version is a cache key of its own process and is not compared.
func assertPanelsEqual(t *testing.T, want, got *Panel) {
	t.Helper()
	if want.Len() != got.Len() {
		t.Fatalf("panel holds %d participants, want %d", got.Len(), want.Len())
	}
	want.RangeRecords(func(w *PanelRecord) bool {
		var g Participant
		if !got.LookupByID(w.ID, &g) {
			t.Fatalf("participant %d missing", w.ID)
		}
		pub, user, _ := got.UserOf(w.ID)
		ga, _ := got.Activity(w.ID)
		wp := w.Participant
		if pub != w.PublisherID || user != w.User || g.CountryID != wp.CountryID || g.Device != wp.Device ||
			g.DeviceID != wp.DeviceID || g.DeviceIDHash != wp.DeviceIDHash || !reflect.DeepEqual(slices.Clone(g.Entries), slices.Clone(wp.Entries)) ||
			!answersEqual(g.Answers, wp.Answers) || ga != w.Activity {
			t.Fatalf("participant %d:\n got %d %q %+v %+v\nwant %d %q %+v %+v", w.ID, pub, user, g, ga, w.PublisherID, w.User, wp, w.Activity)
		}
		return true
	})
}

func answersEqual(a, b []Answer) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].QuestionID != b[i].QuestionID || a[i].Text != b[i].Text || !slices.Equal(a[i].Codes, b[i].Codes) {
			return false
		}
	}
	return true
}

// FuzzDecodeCampaign: any bytes decode to a campaign that encodes back to them, or fail;
// none panics.
func FuzzDecodeCampaign(f *testing.F) {
	for _, c := range codecCampaigns() {
		f.Add(AppendCampaign(nil, &c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, rest, err := DecodeCampaign(b)
		if err != nil {
			return
		}
		again, _, err := DecodeCampaign(AppendCampaign(nil, &c))
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("re-encoded campaign differs: %v", err)
		}
		_ = rest
	})
}

// FuzzDecodePanelRecord: any bytes decode to a record or fail; none panics, and a decoded
// record encodes back to the bytes it came from.
func FuzzDecodePanelRecord(f *testing.F) {
	rec := PanelRecord{User: "u1", Participant: Participant{ID: 4, PublisherID: 2, CountryID: 1, DeviceID: "d",
		Answers: []Answer{{QuestionID: 42, Codes: []int32{30}}}, Entries: []Entry{{CampaignID: 3, At: 9}}},
		Activity: Activity{LastActive: 1_765_000_000, Days: 5}}
	f.Add(AppendPanelRecord(nil, &rec))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r PanelRecord
		rest, err := DecodePanelRecord(b, &r)
		if err != nil {
			return
		}
		if got := AppendPanelRecord(nil, &r); string(got) != string(b[:len(b)-len(rest)]) {
			// Varints have one shortest form; a longer one decodes too, so only the value
			// must survive a second round.
			var r2 PanelRecord
			if _, err := DecodePanelRecord(got, &r2); err != nil || !reflect.DeepEqual(r2.Participant.ID, r.Participant.ID) {
				t.Fatalf("re-encoded record differs: %v", err)
			}
		}
	})
}
