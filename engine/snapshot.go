package engine

import "sync/atomic"

// Snapshot is an immutable index of every active campaign, partitioned by
// country. It is built off the request path and published through
// Engine.Store; readers never lock it. Counts live outside it (Counters), so
// only a change of campaign definitions needs a new snapshot.
type Snapshot struct {
	counters *Counters
	alloc    *allocator // nil: greedy
	parts    map[int32]*country
	version  uint64
}

// snapshotVersions numbers snapshots in the order they are made, process-wide.
var snapshotVersions atomic.Uint64

// Version identifies this snapshot: a later snapshot has a larger version. Caches of match
// results key on it rather than holding the snapshot itself, which would keep a replaced
// index in memory.
func (s *Snapshot) Version() uint64 { return s.version }

// country is the index of one country: a base partition, and the campaigns
// changed or added since it was built in a small delta partition. Base
// campaigns replaced or removed since are dead (skipped). Once the delta
// grows past deltaLimit the country is rebuilt as one base again.
type country struct {
	base  *partition
	delta *partition // nil without changes
	dead  []uint64   // bitset over base slots
	ndead int
}

// deltaLimit is how many changed campaigns (dead or in the delta) a country
// holds before With rebuilds it whole: a delta rebuild costs O(delta), a
// full one O(country); matching pays a little per dead or delta campaign.
func deltaLimit(n int) int { return max(64, min(n/32, 2048)) }

func (c *country) isDead(slot int32) bool {
	return c.dead != nil && c.dead[slot>>6]&(1<<(slot&63)) != 0
}

// slot resolves a campaign id to its live partition and slot.
func (c *country) slot(id int64) (*partition, int32, bool) {
	if c.delta != nil {
		if ref, ok := c.delta.byID.get(id); ok && ref.self >= 0 {
			return c.delta, ref.self, true
		}
	}
	if ref, ok := c.base.byID.get(id); ok && ref.self >= 0 && !c.isDead(ref.self) {
		return c.base, ref.self, true
	}
	return nil, 0, false
}

func (c *country) len() int {
	n := len(c.base.camps) - c.ndead
	if c.delta != nil {
		n += len(c.delta.camps)
	}
	return n
}

// defs returns the definitions of the live campaigns.
func (c *country) defs(skip map[int64]bool) []*Campaign {
	out := make([]*Campaign, 0, c.len())
	for i := range c.base.cold {
		if !c.isDead(int32(i)) && !skip[c.base.cold[i].id] {
			out = append(out, c.base.cold[i].def)
		}
	}
	if c.delta != nil {
		for i := range c.delta.cold {
			if !skip[c.delta.cold[i].id] {
				out = append(out, c.delta.cold[i].def)
			}
		}
	}
	return out
}

// Build indexes the campaigns with status StatusActive (the others are
// skipped), reading and writing counts through counters (a new set when nil).
// The snapshot keeps copies of the campaigns that share their slices: do not
// modify those afterwards.
func Build(campaigns []Campaign, counters *Counters) *Snapshot {
	return build(campaigns, counters, nil, nil)
}

// build is Build ranking under alloc (nil: greedy), calling yield (when not nil) between
// steps of a few milliseconds of work.
func build(campaigns []Campaign, counters *Counters, alloc *allocator, yield func()) *Snapshot {
	if yield != nil {
		yield() // the build starts here
	}
	if counters == nil {
		counters = NewCounters()
	}
	n := 0
	for i := range campaigns {
		if campaigns[i].Status == StatusActive {
			n++
		}
	}
	owned := make([]Campaign, 0, n) // the snapshot's copies (conditiontexts.go)
	for i := range campaigns {
		if campaigns[i].Status == StatusActive {
			owned = append(owned, ownCampaign(&campaigns[i]))
		}
		if yield != nil && i%yieldEvery == yieldEvery-1 {
			yield()
		}
	}
	byCountry := make(map[int32][]*Campaign)
	for i := range owned {
		c := &owned[i]
		byCountry[c.CountryID] = append(byCountry[c.CountryID], c)
	}
	s := &Snapshot{counters: counters, alloc: alloc, parts: make(map[int32]*country, len(byCountry)), version: snapshotVersions.Add(1)}
	for id, defs := range byCountry {
		s.parts[id] = &country{base: buildPartition(defs, counters, alloc, yield)}
	}
	return s
}

// With returns a new snapshot in which the campaigns of changed replace (or
// add to) those with the same id and the campaigns of removed are gone; s is
// left untouched. Countries a change does not touch are shared with s. In a
// touched country the base index is shared too: only a small delta index of
// the changed campaigns is built, until the changes pile up and the country
// is rebuilt whole. A changed campaign that is not active simply leaves the
// index.
func (s *Snapshot) With(changed []Campaign, removed []int64) *Snapshot {
	gone := make(map[int64]bool, len(changed)+len(removed))
	touched := make(map[int32]bool)
	for _, id := range removed {
		gone[id] = true
	}
	for i := range changed {
		gone[changed[i].ID] = true
		if changed[i].Status == StatusActive {
			touched[changed[i].CountryID] = true
		}
	}
	for id, c := range s.parts {
		for cid := range gone {
			if _, _, ok := c.slot(cid); ok {
				touched[id] = true
				break
			}
		}
	}
	n := &Snapshot{counters: s.counters, alloc: s.alloc, parts: make(map[int32]*country, len(s.parts)+1), version: snapshotVersions.Add(1)}
	for id, c := range s.parts {
		if !touched[id] {
			n.parts[id] = c
		}
	}
	for id := range touched {
		var added []*Campaign
		for i := range changed {
			if c := &changed[i]; c.Status == StatusActive && c.CountryID == id {
				own := ownCampaign(c)
				added = append(added, &own)
			}
		}
		old := s.parts[id]
		if old == nil {
			if len(added) > 0 {
				n.parts[id] = &country{base: buildPartition(added, s.counters, s.alloc, nil)}
			}
			continue
		}
		if c := old.with(added, gone, s.counters, s.alloc); c != nil {
			n.parts[id] = c
		}
	}
	return n
}

// with returns the country with the gone campaigns removed and added ones
// (re)indexed, or nil when no campaign is left.
func (c *country) with(added []*Campaign, gone map[int64]bool, ctr *Counters, alloc *allocator) *country {
	n := &country{base: c.base, ndead: c.ndead}
	n.dead = make([]uint64, (len(c.base.camps)+63)/64)
	copy(n.dead, c.dead)
	for id := range gone {
		if ref, ok := c.base.byID.get(id); ok && ref.self >= 0 && !c.isDead(ref.self) {
			n.dead[ref.self>>6] |= 1 << (ref.self & 63)
			n.ndead++
		}
	}
	var delta []*Campaign
	if c.delta != nil {
		for i := range c.delta.cold {
			if !gone[c.delta.cold[i].id] {
				delta = append(delta, c.delta.cold[i].def)
			}
		}
	}
	delta = append(delta, added...)
	live := len(c.base.camps) - n.ndead + len(delta)
	if live == 0 {
		return nil
	}
	if n.ndead+len(delta) > deltaLimit(live) {
		defs := c.defs(gone)
		defs = append(defs, added...)
		return &country{base: buildPartition(defs, ctr, alloc, nil)}
	}
	if len(delta) > 0 {
		n.delta = buildPartition(delta, ctr, alloc, nil)
	}
	return n
}

// Counters returns the counters the snapshot reads.
func (s *Snapshot) Counters() *Counters { return s.counters }

// Len returns the number of active campaigns indexed.
func (s *Snapshot) Len() int {
	n := 0
	for _, c := range s.parts {
		n += c.len()
	}
	return n
}

// Campaign returns the definition of an indexed (active) campaign, as it was given but for
// its texts, normalized (a copy when the snapshot holds them packed: conditiontexts.go).
func (s *Snapshot) Campaign(id int64) (*Campaign, bool) {
	for _, c := range s.parts {
		if p, slot, ok := c.slot(id); ok {
			return unpackedCampaign(p.cold[slot].def), true
		}
	}
	return nil, false
}

// IndexBytes estimates the memory the index holds beyond the campaign
// definitions themselves; benchmarks report it per campaign.
func (s *Snapshot) IndexBytes() int {
	n := 0
	for _, c := range s.parts {
		n += c.base.bytes() + cap(c.dead)*8
		if c.delta != nil {
			n += c.delta.bytes()
		}
	}
	return n
}
