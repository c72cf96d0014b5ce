package engine

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// The key table: each shard finds a row by its key (publisher, user) in an
// open-addressed hash table of uint32 slots, keyTag | row+1 (0 empty), probed
// linearly. The key itself is not in the table but in the row's record in the
// arena (panelarena.go), which keyAt compares; the tag makes that read rare.
// The id index (panelids.go) uses the same slot arithmetic.

// keyHash hashes a key: the shard is h % panelShards, the slot and tag use
// the bits above.
func (pl *Panel) keyHash(publisher int64, user string) uint64 {
	return maphash.String(pl.seed, user) ^ uint64(publisher)*0x9e3779b97f4a7c15
}

// find returns the row of (publisher, user) and the table slot where it is
// or would go.
func (s *panelShard) find(h uint64, publisher int64, user string) (row uint32, slot int, ok bool) {
	if len(s.table) == 0 {
		return 0, -1, false
	}
	for i := slotOf(h, len(s.table)); ; i = nextSlot(i, len(s.table)) {
		v := s.table[i]
		if v == 0 {
			return 0, i, false
		}
		if v&^rowMask == keyTag(h) && s.keyAt(v&rowMask-1, publisher, user) {
			return v&rowMask - 1, i, true
		}
	}
}

// keyAt reports whether the record of row r has the key (publisher, user).
func (s *panelShard) keyAt(r uint32, publisher int64, user string) bool {
	b := s.arena[s.off[r]:]
	pub, n := binary.Varint(b)
	if pub != publisher {
		return false
	}
	b = b[n:]
	ul, n := binary.Uvarint(b)
	b = b[n:]
	return ul == uint64(len(user)) && string(b[:ul]) == user
}

// growTable doubles the key table when it is three quarters full.
func (s *panelShard) growTable(pl *Panel) {
	if len(s.table) != 0 && 4*(len(s.id)+1) <= 3*len(s.table) {
		return
	}
	s.rehash(pl, max(len(s.table)*2, 64))
}

// rehash rebuilds the key table with n slots.
func (s *panelShard) rehash(pl *Panel, n int) {
	t := make([]uint32, n)
	for r := range uint32(len(s.id)) {
		rec := s.record(r)
		h := pl.keyHash(rec.pub, unsafe.String(unsafe.SliceData(rec.user), len(rec.user)))
		i := slotOf(h, n)
		for t[i] != 0 {
			i = nextSlot(i, n)
		}
		t[i] = keyTag(h) | r + 1
	}
	s.table = t
}

// keyTag is the part of a key table slot above the row: six bits of the
// key's hash (bits the shard and the slot do not use), so that a probe reads
// the record of another key only once in 64 times.
func keyTag(h uint64) uint32 { return uint32(h>>58) << rowBits }

// slotOf maps a hash to a slot of a table of n slots (any n, not only powers
// of two, so that a table sized from a row count needs no rounding up): the
// 32 hash bits above the shard bits scaled to [0, n).
func slotOf(h uint64, n int) int {
	return int(uint64(uint32(h>>shardBits)) * uint64(n) >> 32)
}

// nextSlot is linear probing with wrap-around.
func nextSlot(i, n int) int {
	if i++; i == n {
		return 0
	}
	return i
}

// tableLoad is the load an open-addressed table is sized for by Reserve and
// Trim: 4/0.72, about 5.6 bytes of table per row (tables double at 3/4, as append
// would, when rows come one by one).
const tableLoad = 0.72

// tableFor returns the slots for rows at tableLoad.
func tableFor(rows int) int {
	return max(64, int(float64(rows)/tableLoad)+1)
}
