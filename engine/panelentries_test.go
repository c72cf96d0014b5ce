package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Packed entry histories decode to what was packed, and recording an entry into one gives
// the history withEntry gives, whatever the ids and times (before entryEpoch too).
func TestPackedEntriesAgreeWithSlices(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var ref []Entry
		var packed []byte
		for range r.IntN(60) {
			e := Entry{CampaignID: 1 + r.Int64N(1<<r.IntN(40)), At: r.Int64N(4_000_000_000) - 1_000_000_000}
			if r.IntN(4) == 0 && len(ref) > 0 { // the same campaign again, earlier or later
				e.CampaignID = ref[r.IntN(len(ref))].CampaignID
			}
			var changedRef, changed bool
			ref, changedRef = withEntry(ref, e)
			packed, changed = recordEntry(packed, e)
			if changed != changedRef {
				t.Fatalf("recording %v: changed %v, want %v", e, changed, changedRef)
			}
			if got := decodeEntries(packed, nil); !slices.Equal(got, ref) {
				t.Fatalf("after %v: decoded %v, want %v", e, got, ref)
			}
			// In place, the bytes are those packing the whole list gives.
			if want := appendEntries(nil, ref); !slices.Equal(packed, want) {
				t.Fatalf("after %v: packed % x, want % x", e, packed, want)
			}
		}
		if got := decodeEntries(packEntries(nil, ref), nil); !slices.Equal(got, ref) {
			t.Fatalf("packEntries: decoded %v, want %v", got, ref)
		}
	}
}

// withEntry, the reference: a copy of the sorted entries with e recorded (the later
// time wins for a campaign entered before), or entries itself and false when
// e changes nothing.
func withEntry(entries []Entry, e Entry) ([]Entry, bool) {
	i, found := slices.BinarySearchFunc(entries, e.CampaignID, func(x Entry, id int64) int { return cmpInt64(x.CampaignID, id) })
	if found {
		if entries[i].At >= e.At {
			return entries, false
		}
		out := slices.Clone(entries)
		out[i].At = e.At
		return out, true
	}
	out := make([]Entry, 0, len(entries)+1)
	out = append(out, entries[:i]...)
	out = append(out, e)
	return append(out, entries[i:]...), true
}

// Recording into a history in its own array (spare capacity: edited in place) or into one
// without (a new array) gives the same bytes as the decoding form, and never writes past
// the history's length into memory it does not own.
func TestRecordEntryInPlaceAgreesWithDecoded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var ref []Entry
		for range r.IntN(20) {
			ref, _ = withEntry(ref, Entry{CampaignID: 1 + r.Int64N(1<<r.IntN(30)), At: entryEpoch + r.Int64N(1<<r.IntN(34)) - 1<<20})
		}
		base := appendEntries(nil, ref)
		e := Entry{CampaignID: 1 + r.Int64N(1<<r.IntN(30)), At: entryEpoch + r.Int64N(1<<r.IntN(34)) - 1<<20}
		if r.IntN(3) == 0 && len(ref) > 0 {
			e.CampaignID = ref[r.IntN(len(ref))].CampaignID
		}
		want, wantChanged := recordEntryDecoded(slices.Clone(base), e)
		for _, spare := range []int{0, 1, 3, 32} {
			arr := make([]byte, len(base)+spare+4)
			for i := range arr {
				arr[i] = 0xAA
			}
			old := append(arr[:0:len(base)+spare], base...)
			got, changed := recordEntry(old, e)
			if changed != wantChanged || !slices.Equal(got, want) {
				t.Fatalf("spare %d, %v into % x: % x %v, want % x %v", spare, e, base, got, changed, want, wantChanged)
			}
			for i := len(base) + spare; i < len(arr); i++ {
				if arr[i] != 0xAA {
					t.Fatalf("spare %d: wrote past the capacity at %d", spare, i)
				}
			}
		}
	}
}

// TestEntryColumn: whatever the histories' lengths and the order of edits (in place within
// a span, or moved to the arena's end), compactions in place and trims, every row reads
// back what was last set for it.
func TestEntryColumn(t *testing.T) {
	defer func(old int) { panelCompactMin = old }(panelCompactMin)
	panelCompactMin = 64 // compact as soon as there is garbage worth an eighth of the arena
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		var c entryColumn
		ref := map[uint32][]byte{}
		rows := uint32(1 + r.IntN(200))
		check := func(op string, i int) {
			t.Helper()
			for row := range rows {
				if got := c.get(row); !slices.Equal(got, ref[row]) {
					t.Fatalf("round %d, op %d (%s): row %d reads %v, want %v", round, i, op, row, got, ref[row])
				}
			}
		}
		for i := range 400 {
			row := uint32(r.IntN(int(rows)))
			var b []byte
			switch old := c.get(row); r.IntN(3) {
			case 0: // grown in place while it fits, as recordEntry does
				b = old
				for range r.IntN(12) {
					b = append(b, byte(r.IntN(256)))
				}
			case 1: // rewritten shorter in its span
				b = old[:r.IntN(len(old)+1)]
			default: // a new history of any length, long ones included
				b = make([]byte, r.IntN(300))
				for k := range b {
					b[k] = byte(r.IntN(256))
				}
			}
			// What the row will read: b's bytes now (b may be the span, which set keeps).
			want := slices.Clone(b)
			c.set(row, b)
			if len(want) == 0 && c.get(row) == nil {
				want = nil
			}
			ref[row] = want
			check("set", i)
			switch r.IntN(40) {
			case 0:
				c.compact(true)
				check("compact", i)
			case 1:
				c.trim()
				check("trim", i)
			}
		}
	}
}
