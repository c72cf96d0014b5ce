package engine

import (
	"encoding/binary"
	"slices"
)

// A participant's entry history is kept packed, one byte string per participant: for each
// entry, in campaign order, the campaign id's increase over the previous entry's and the
// entry time's distance from entryEpoch (zig-zag), both as uvarints. Ten entries take about
// 65 bytes instead of 160 as []Entry; at a million participants with a history, the panel's
// largest part (docs/performance.md).

// entryColumn holds the packed entry histories of a shard's rows in one arena. A history
// per participant as a []byte of its own was, at a million participants, a million heap
// objects and a slice header each: half the serving process's objects at 100k campaigns,
// marked by every collector cycle. In the arena they are one array without pointers.
//
// Row r's history is arena[off[r]:][:n[r]], in a span of room[r] bytes (room 0: no
// history) preceded by a head naming the row and the span's room, so that compact can walk
// the arena and slide the live spans down in place: a start-up records histories entry by
// entry, moving each a few times, and compacting into a new arena each time would allocate
// arenas by the gigabyte. An edit that outgrows its span moves the history to the arena's
// end with room for about one more entry; the old span becomes garbage. Edits happen under
// the shard's write lock; readers decode a copy under its read lock.
type entryColumn struct {
	arena   []byte
	off     []uint32
	n, room []uint32
	garbage int // arena bytes (heads included) no row's span uses any more
}

// spanHead is the head before each span: its row and its room, little-endian uint32s.
const spanHead = 8

// An entry column compacts its arena when garbage passes both entriesCompactMin bytes and
// 1/entriesGarbageShare of the arena.
const (
	entriesCompactMin   = 64 << 10
	entriesGarbageShare = 8
)

// get returns row r's packed history, a view of the arena whose capacity is the row's
// span: recordEntry and packEntries edit it in place when the result fits, and set then
// records the new length.
func (c *entryColumn) get(r uint32) []byte {
	if int(r) >= len(c.off) || c.room[r] == 0 {
		return nil
	}
	o := int(c.off[r])
	return c.arena[o : o+int(c.n[r]) : o+int(c.room[r])]
}

// set makes b row r's packed history: in its span when it fits (b may be the span itself,
// edited in place), else at the arena's end.
func (c *entryColumn) set(r uint32, b []byte) {
	if int(r) >= len(c.off) {
		grow := int(r) + 1 - len(c.off)
		c.off = slices.Grow(c.off, grow)[:r+1]
		c.n = slices.Grow(c.n, grow)[:r+1]
		c.room = slices.Grow(c.room, grow)[:r+1]
	}
	if len(b) <= int(c.room[r]) {
		copy(c.arena[c.off[r]:], b) // nothing to move when b is the span
		c.n[r] = uint32(len(b))
		return
	}
	if c.room[r] != 0 {
		c.garbage += spanHead + int(c.room[r])
		c.off[r], c.n[r], c.room[r] = 0, 0, 0
	}
	room := len(b) + 8 // room for another entry or so before the next move
	need := spanHead + room
	if cap(c.arena)-len(c.arena) < need {
		if c.garbage > min(panelCompactMin, entriesCompactMin) && c.garbage > len(c.arena)/entriesGarbageShare {
			c.compact(true)
		}
		if cap(c.arena)-len(c.arena) < need {
			// A quarter more, not append's doubling: the arena is most of the histories' memory.
			o := len(c.arena)
			a := make([]byte, o, o+max(o/4, need, 4096))
			copy(a, c.arena)
			c.arena = a
		}
	}
	o := len(c.arena)
	c.arena = binary.LittleEndian.AppendUint32(c.arena, r)
	c.arena = binary.LittleEndian.AppendUint32(c.arena, uint32(room))
	c.arena = append(c.arena, b...)
	c.arena = c.arena[:o+need]
	c.off[r], c.n[r], c.room[r] = uint32(o+spanHead), uint32(len(b)), uint32(room)
}

// compact slides the live spans down over the garbage, in place, each keeping a little
// room to grow when slack (at most the room it had), exactly its bytes otherwise.
func (c *entryColumn) compact(slack bool) {
	w := 0
	for p := 0; p+spanHead <= len(c.arena); {
		r := binary.LittleEndian.Uint32(c.arena[p:])
		room := int(binary.LittleEndian.Uint32(c.arena[p+4:]))
		data := p + spanHead
		if int(r) < len(c.off) && c.room[r] != 0 && int(c.off[r]) == data {
			n := int(c.n[r])
			keep := n
			if slack {
				keep = min(n+min(n/8+4, 32), room)
			}
			copy(c.arena[w:], c.arena[p:data+n]) // w ≤ p: copy moves overlapping bytes correctly
			binary.LittleEndian.PutUint32(c.arena[w+4:], uint32(keep))
			c.off[r], c.room[r] = uint32(w+spanHead), uint32(keep)
			w += spanHead + keep
		}
		p = data + room
	}
	c.arena, c.garbage = c.arena[:w], 0
}

// trim compacts the column without room to grow and drops unused capacity.
func (c *entryColumn) trim() {
	c.compact(false)
	c.arena = slices.Clip(slices.Clone(c.arena))
	c.off, c.n, c.room = withCap(c.off, len(c.off)), withCap(c.n, len(c.n)), withCap(c.room, len(c.room))
}

// entryEpoch is the origin of packed entry times (2020-09-13): recent times take 4 bytes.
const entryEpoch = 1_600_000_000

// appendEntries appends the packed form of entries, which are sorted by campaign id.
func appendEntries(b []byte, entries []Entry) []byte {
	var prev int64
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(e.CampaignID-prev))
		d := e.At - entryEpoch
		b = binary.AppendUvarint(b, uint64(d<<1)^uint64(d>>63))
		prev = e.CampaignID
	}
	return b
}

// decodeEntries appends the entries packed in b to dst.
func decodeEntries(b []byte, dst []Entry) []Entry {
	var id int64
	for len(b) > 0 {
		delta, n := binary.Uvarint(b)
		if n <= 0 {
			return dst
		}
		b = b[n:]
		z, m := binary.Uvarint(b)
		if m <= 0 {
			return dst
		}
		b = b[m:]
		id += int64(delta)
		dst = append(dst, Entry{CampaignID: id, At: int64(z>>1) ^ -int64(z&1) + entryEpoch})
	}
	return dst
}

// packEntries returns the packed form of entries, stored in old's memory when it fits (old
// belongs to the caller's row, under its shard's write lock: readers decode a copy).
func packEntries(old []byte, entries []Entry) []byte {
	var buf [256]byte
	packed := appendEntries(buf[:0], entries)
	if len(packed) <= cap(old) {
		return append(old[:0], packed...)
	}
	return append([]byte(nil), packed...) // capacity rounded up to the allocation's size
}

// recordEntry returns the packed history old with e recorded (the later time wins for a
// campaign entered before), and whether anything changed. It edits the packed bytes where
// they are, without decoding the list: it finds e's place by summing the deltas, then
// writes e's time over the old one, or inserts e there and re-encodes the next entry's
// delta, moving the tail when a length changes. The result is byte for byte what packing
// the decoded list with e set would give (packEntries(setEntry(...))). old is reused when
// the result fits its capacity (old belongs to the caller's row, under its shard's write
// lock: readers decode a copy); otherwise the result gets a new array of the allocation's
// size, as packEntries does.
func recordEntry(old []byte, e Entry) ([]byte, bool) {
	var id int64 // the campaign id of the entry before p
	p := 0       // where the entry at or after e.CampaignID starts (len(old): none)
	for p < len(old) {
		delta, n := binary.Uvarint(old[p:])
		if n <= 0 {
			break
		}
		next := id + int64(delta)
		if next >= e.CampaignID {
			if next == e.CampaignID { // the later time wins
				z, m := binary.Uvarint(old[p+n:])
				if m <= 0 {
					return recordEntryDecoded(old, e)
				}
				if int64(z>>1)^-int64(z&1)+entryEpoch >= e.At {
					return old, false
				}
				var t [binary.MaxVarintLen64]byte
				k := binary.PutUvarint(t[:], zigzagAt(e.At))
				return splice(old, p+n, p+n+m, t[:k]), true
			}
			// Insert e before this entry, whose delta shrinks to next - e.CampaignID.
			var ins [3 * binary.MaxVarintLen64]byte
			k := binary.PutUvarint(ins[:], uint64(e.CampaignID-id))
			k += binary.PutUvarint(ins[k:], zigzagAt(e.At))
			k += binary.PutUvarint(ins[k:], uint64(next-e.CampaignID))
			return splice(old, p, p+n, ins[:k]), true
		}
		_, m := binary.Uvarint(old[p+n:])
		if m <= 0 {
			break
		}
		id, p = next, p+n+m
	}
	if p < len(old) { // malformed tail: decodeEntries stops there, so repack what it reads
		return recordEntryDecoded(old, e)
	}
	var ins [2 * binary.MaxVarintLen64]byte
	k := binary.PutUvarint(ins[:], uint64(e.CampaignID-id))
	k += binary.PutUvarint(ins[k:], zigzagAt(e.At))
	return splice(old, p, p, ins[:k]), true
}

// splice returns old with old[i:j] replaced by ins, in old's array when it fits.
func splice(old []byte, i, j int, ins []byte) []byte {
	size := len(old) - (j - i) + len(ins)
	if size <= cap(old) {
		b := old[:size]
		copy(b[i+len(ins):], old[j:]) // copy moves overlapping bytes correctly
		copy(b[i:], ins)
		return b
	}
	b := slices.Grow([]byte(nil), size)[:size] // capacity rounded up to the allocation's size
	copy(b, old[:i])
	copy(b[i:], ins)
	copy(b[i+len(ins):], old[j:])
	return b
}

// zigzagAt is the packed form of an entry time: its distance from entryEpoch, zig-zag.
func zigzagAt(at int64) uint64 {
	d := at - entryEpoch
	return uint64(d<<1) ^ uint64(d>>63)
}

// recordEntryDecoded is recordEntry by decoding the list, setting e and packing it again:
// the general form recordEntry falls back to for bytes it cannot read as a whole.
func recordEntryDecoded(old []byte, e Entry) ([]byte, bool) {
	var buf [16]Entry
	entries, changed := setEntry(decodeEntries(old, buf[:0]), e)
	if !changed {
		return old, false
	}
	return packEntries(old, entries), true
}

// setEntry records e in the sorted entries, in place (the later time wins for a campaign
// entered before), and reports whether anything changed.
func setEntry(entries []Entry, e Entry) ([]Entry, bool) {
	i, found := slices.BinarySearchFunc(entries, e.CampaignID, func(x Entry, id int64) int { return cmpInt64(x.CampaignID, id) })
	switch {
	case found && entries[i].At >= e.At:
		return entries, false
	case found:
		entries[i].At = e.At
		return entries, true
	}
	return slices.Insert(entries, i, e), true
}
