// Package ringcache is a cache of byte values kept in fixed rings of memory, for values
// that are many, short-lived and written at a high rate (the answers of GET /campaigns).
//
// A set copies the value into its shard's ring and a get copies it out: nothing is allocated
// per entry, and the garbage collector has nothing to scan or free (the rings are byte
// slices allocated once, the indexes map integers to integers). A general-purpose cache
// holding one heap object per value made the collector run every few seconds under offers
// load, and the requests that met a collection made the tail latency. An entry lives until
// its ring comes round and writes over it, or until it is deleted; expiry, if any, is the
// caller's to encode in the value. Like any cache it may drop a set (a value larger than a
// quarter of a ring) and forget an entry at any time.
package ringcache

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// entryHead is the bytes before each value in a ring: its length.
const entryHead = 4

// shardBytes is the ring size a cache aims at per shard: rings of about a MiB keep each
// shard's lock short and its index small, and values of up to a quarter of it cacheable.
const shardBytes = 1 << 20

// maxShards bounds the number of shards (locks) of a cache.
const maxShards = 64

// Cache is a concurrent cache from 64-bit keys (hashes, typically) to byte values. The zero
// value is not usable; call New.
type Cache struct {
	shards []shard
	// evictions counts entries that left the cache: written over by their ring or deleted.
	evictions atomic.Uint64
}

type shard struct {
	mu   sync.Mutex
	ring []byte
	// pos is the number of bytes the ring has advanced since it was made (tails skipped at
	// the end of a lap included): an entry written at absolute position p sits at p mod
	// len(ring), and is intact while pos - p <= len(ring).
	pos uint64
	idx map[uint64]uint64 // key → absolute position of its entry
	_   [80]byte          // 128 bytes a shard: the shards' locks on separate cache lines
}

// New returns a cache that holds at most maxBytes of values and their heads (at least one
// 4 KiB ring). The rings are allocated at once; the pages they use are touched as they fill.
func New(maxBytes int64) *Cache {
	maxBytes = max(maxBytes, 4<<10)
	n := 1
	for n < maxShards && int64(n)*2*shardBytes <= maxBytes {
		n *= 2
	}
	c := &Cache{shards: make([]shard, n)}
	for i := range c.shards {
		c.shards[i].ring = make([]byte, maxBytes/int64(n))
		c.shards[i].idx = make(map[uint64]uint64)
	}
	return c
}

func (c *Cache) shard(key uint64) *shard {
	// The high bits pick the shard: callers' keys are hashes, and the map hashes the key again.
	return &c.shards[(key>>32)%uint64(len(c.shards))]
}

// Set stores first followed by second as the value of key, replacing any value it had (two
// parts, so that a caller need not join them first). A value larger than a quarter of a
// shard's ring is not stored (and key's old value is dropped).
func (c *Cache) Set(key uint64, first, second []byte) {
	s := c.shard(key)
	size := uint64(entryHead + len(first) + len(second))
	ringLen := uint64(len(s.ring))
	s.mu.Lock()
	defer s.mu.Unlock()
	if size > ringLen/4 {
		if _, ok := s.idx[key]; ok {
			delete(s.idx, key)
			c.evictions.Add(1)
		}
		return
	}
	off := s.pos % ringLen
	if off+size > ringLen { // the lap's tail is too short: the entry starts the next lap
		s.pos += ringLen - off
		off = 0
	}
	if off == 0 { // a new lap (entries never straddle two)
		s.sweep(c, s.pos+size)
	}
	b := s.ring[off : off+size]
	binary.LittleEndian.PutUint32(b, uint32(len(first)+len(second)))
	copy(b[entryHead+copy(b[entryHead:], first):], second)
	s.idx[key] = s.pos
	s.pos += size
}

// sweep deletes from the index the entries a write ending at end overwrites or has
// overwritten, once per lap, so that the index holds at most two laps of entries.
func (s *shard) sweep(c *Cache, end uint64) {
	ringLen := uint64(len(s.ring))
	if end <= ringLen {
		return
	}
	for k, p := range s.idx {
		if end-p > ringLen {
			delete(s.idx, k)
			c.evictions.Add(1)
		}
	}
}

// Get appends key's value to dst and reports whether the cache held it.
func (c *Cache) Get(dst []byte, key uint64) ([]byte, bool) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.idx[key]
	if !ok {
		return dst, false
	}
	ringLen := uint64(len(s.ring))
	if s.pos-p > ringLen { // written over since (the sweep had not reached it)
		delete(s.idx, key)
		c.evictions.Add(1)
		return dst, false
	}
	off := p % ringLen
	n := uint64(binary.LittleEndian.Uint32(s.ring[off:]))
	return append(dst, s.ring[off+entryHead:off+entryHead+n]...), true
}

// Del forgets key's value.
func (c *Cache) Del(key uint64) {
	s := c.shard(key)
	s.mu.Lock()
	if _, ok := s.idx[key]; ok {
		delete(s.idx, key)
		c.evictions.Add(1)
	}
	s.mu.Unlock()
}

// Capacity is the bytes of the cache's rings: what they hold before they come round.
func (c *Cache) Capacity() int64 {
	var n int64
	for i := range c.shards {
		n += int64(len(c.shards[i].ring))
	}
	return n
}

// Stats are a cache's figures for metrics.
type Stats struct {
	// Bytes is the memory of the rings in use: what has been written into them, up to their
	// size (a ring, once full, stays full of old and current entries).
	Bytes int64
	// Evictions counts entries written over by their ring or deleted.
	Evictions uint64
	// Advanced is the bytes the rings have advanced since the cache was made: over an
	// interval, its growth against Capacity says how long an entry written now survives.
	Advanced uint64
}

// Stats returns the cache's figures.
func (c *Cache) Stats() Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Bytes += int64(min(s.pos, uint64(len(s.ring))))
		st.Advanced += s.pos
		s.mu.Unlock()
	}
	st.Evictions = c.evictions.Load()
	return st
}
