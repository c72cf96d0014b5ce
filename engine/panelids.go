package engine

import "sync"

// The id index: participant id → ref (shard<<rowBits | row), one
// open-addressed table per index shard, for the reads by id (entry,
// callback, activity) that do not know the participant's key.

// idIndex maps participant ids to rows: an open-addressed table of refs
// (shard<<rowBits | row) + 1. Lock order: an idIndex lock is taken before a
// shard lock, never while holding one.
type idIndex struct {
	mu    sync.RWMutex
	table []uint32
	n     int
}

// idHash hashes a participant id: its index shard, then its slot there.
func idHash(id int64) uint64 {
	h := uint64(id) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// index records the row of a new participant id.
func (pl *Panel) index(id int64, ref uint32) {
	x := &pl.ids[idHash(id)%panelShards]
	x.mu.Lock()
	if 4*(x.n+1) > 3*len(x.table) {
		pl.rehashIDs(x, max(len(x.table)*2, 64))
	}
	n := len(x.table)
	i := slotOf(idHash(id), n)
	for x.table[i] != 0 {
		i = nextSlot(i, n)
	}
	x.table[i] = ref + 1
	x.n++
	x.mu.Unlock()
}

// rehashIDs rebuilds an id index with n slots (the caller holds x.mu).
func (pl *Panel) rehashIDs(x *idIndex, n int) {
	t := make([]uint32, n)
	for _, v := range x.table {
		if v == 0 {
			continue
		}
		i := slotOf(idHash(pl.idOf(v-1)), n)
		for t[i] != 0 {
			i = nextSlot(i, n)
		}
		t[i] = v
	}
	x.table = t
}

// idOf returns the participant id of row ref (shard<<rowBits | row).
func (pl *Panel) idOf(ref uint32) int64 {
	s := &pl.shards[ref>>rowBits]
	s.mu.RLock()
	id := s.id[ref&(1<<rowBits-1)]
	s.mu.RUnlock()
	return id
}

// byID returns the ref of participant id.
func (pl *Panel) byID(id int64) (uint32, bool) {
	x := &pl.ids[idHash(id)%panelShards]
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.table) == 0 {
		return 0, false
	}
	n := len(x.table)
	for i := slotOf(idHash(id), n); x.table[i] != 0; i = nextSlot(i, n) {
		if ref := x.table[i] - 1; pl.idOf(ref) == id {
			return ref, true
		}
	}
	return 0, false
}

// refLocked returns participant id's ref + 1, 0 when unknown (the caller holds the read
// locks of the id index and of every shard).
func (pl *Panel) refLocked(id int64) uint32 {
	x := &pl.ids[idHash(id)%panelShards]
	n := len(x.table)
	if n == 0 {
		return 0
	}
	for i := slotOf(idHash(id), n); x.table[i] != 0; i = nextSlot(i, n) {
		v := x.table[i]
		if s := &pl.shards[(v-1)>>rowBits]; s.id[(v-1)&(1<<rowBits-1)] == id {
			return v
		}
	}
	return 0
}
