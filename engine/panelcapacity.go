package engine

import "slices"

// The panel's capacity: what a bulk load reserves up front and trims after.

// Reserve sizes the panel for n participants in all before a bulk load: each
// shard's columns and both open-addressed tables are allocated once for its
// share of n (with a little room for an uneven spread), so that the load
// neither copies columns as they grow nor rehashes, and the arena grows to
// its expected size in one or two steps (growArena). It never shrinks what
// the panel holds; Trim returns what an estimate too high left unused.
func (pl *Panel) Reserve(n int) {
	if n <= 0 {
		return
	}
	per := n/panelShards + n/panelShards/50 + 64
	for i := range pl.shards {
		s := &pl.shards[i]
		s.mu.Lock()
		if cap(s.id) < per {
			s.setCap(per)
		}
		if len(s.table) < tableFor(per) {
			s.rehash(pl, tableFor(per))
		}
		s.mu.Unlock()
	}
	for i := range pl.ids {
		x := &pl.ids[i]
		x.mu.Lock()
		if len(x.table) < tableFor(per) {
			pl.rehashIDs(x, tableFor(per))
		}
		x.mu.Unlock()
	}
}

// Trim returns the room a bulk load left unused: columns and arenas with
// more than 1/64 spare capacity are copied to their exact length (garbage
// compacted away), and tables less than half full are rebuilt at tableLoad.
// It locks one shard at a time, so readers and writers carry on meanwhile.
func (pl *Panel) Trim() {
	for i := range pl.shards {
		s := &pl.shards[i]
		s.mu.Lock()
		rows := len(s.id)
		if cap(s.id)-rows > rows/64 {
			s.setCap(rows)
		}
		if s.garbage > 0 {
			s.compact(0)
		} else if cap(s.arena)-len(s.arena) > len(s.arena)/64 {
			s.arena = slices.Clone(s.arena)
		}
		if 2*rows < len(s.table) && tableFor(rows) < len(s.table) {
			s.rehash(pl, tableFor(rows))
		}
		s.entries.trim()
		s.mu.Unlock()
	}
	for i := range pl.ids {
		x := &pl.ids[i]
		x.mu.Lock()
		if 2*x.n < len(x.table) && tableFor(x.n) < len(x.table) {
			pl.rehashIDs(x, tableFor(x.n))
		}
		x.mu.Unlock()
	}
}

// setCap copies the row columns to slices of capacity c ≥ their length
// (the caller holds the write lock; act is read atomically under the read
// lock only, so replacing it under the write lock is safe).
func (s *panelShard) setCap(c int) {
	s.id = withCap(s.id, c)
	s.country = withCap(s.country, c)
	s.version = withCap(s.version, c)
	s.off = withCap(s.off, c)
	s.ansLen = withCap(s.ansLen, c)
	s.device = withCap(s.device, c)
	s.act = withCap(s.act, c)
}

// withCap returns a copy of col with capacity c.
func withCap[T any](col []T, c int) []T {
	out := make([]T, len(col), c)
	copy(out, col)
	return out
}
