package engine

// Walks over the whole panel, a chunk of rows per hold of a shard's lock.

// rangeChunk is how many rows RangeActivity copies under one hold of a shard's lock.
const rangeChunk = 256

// RangeActivity calls fn with the id and activity of every participant until fn returns
// false, as Range sees them but without decoding answers or entries: writing activity back
// walks the whole panel every few minutes and needs nothing else. No lock is held while fn
// runs.
func (pl *Panel) RangeActivity(fn func(id int64, a Activity) bool) {
	var ids [rangeChunk]int64
	var acts [rangeChunk]Activity
	for i := range pl.shards {
		s := &pl.shards[i]
		for r := 0; ; {
			s.mu.RLock()
			n := min(rangeChunk, len(s.id)-r)
			for k := 0; k < n; k++ {
				ids[k], acts[k] = s.id[r+k], readActivity(&s.act[r+k])
			}
			s.mu.RUnlock()
			if n <= 0 {
				break
			}
			for k := range n {
				if !fn(ids[k], acts[k]) {
					return
				}
			}
			r += n
		}
	}
}

// Range calls fn for every participant with its activity until fn returns
// false. It sees each participant once, as stored at the time it is reached.
// p is decoded into one reused Participant: fn must not keep it (nor its
// answers) after it returns. No lock is held while fn runs.
func (pl *Panel) Range(fn func(p *Participant, a Activity) bool) {
	var p Participant
	var a Activity
	pl.rangeRows(func(s *panelShard, r uint32) {
		s.decode(r, &p)
		a = readActivity(&s.act[r])
	}, func() bool { return fn(&p, a) })
}

// rangeRows calls read for every row with its shard's read lock held, then yield without it,
// until yield returns false.
func (pl *Panel) rangeRows(read func(s *panelShard, r uint32), yield func() bool) {
	for i := range pl.shards {
		s := &pl.shards[i]
		for r := uint32(0); ; r++ {
			s.mu.RLock()
			if int(r) >= len(s.id) {
				s.mu.RUnlock()
				break
			}
			read(s, r)
			s.mu.RUnlock()
			if !yield() {
				return
			}
		}
	}
}
