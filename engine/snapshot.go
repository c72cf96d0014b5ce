package engine

// Snapshot is an immutable index of every active campaign, partitioned by
// country. It is built off the request path and published through
// Engine.Store; readers never lock it. Counts live outside it (Counters), so
// only a change of campaign definitions needs a new snapshot.
type Snapshot struct {
	counters *Counters
	parts    map[int32]*partition
}

// Build indexes the campaigns with status StatusActive (the others are
// skipped), reading and writing counts through counters (a new set when nil).
// The snapshot keeps pointers into campaigns: do not modify them afterwards.
func Build(campaigns []Campaign, counters *Counters) *Snapshot {
	if counters == nil {
		counters = NewCounters()
	}
	byCountry := make(map[int32][]*Campaign)
	for i := range campaigns {
		c := &campaigns[i]
		if c.Status == StatusActive {
			byCountry[c.CountryID] = append(byCountry[c.CountryID], c)
		}
	}
	s := &Snapshot{counters: counters, parts: make(map[int32]*partition, len(byCountry))}
	for country, defs := range byCountry {
		s.parts[country] = buildPartition(defs, counters)
	}
	return s
}

// With returns a new snapshot in which the campaigns of changed replace (or
// add to) those with the same id and the campaigns of removed are gone; s is
// left untouched. Only the country partitions a change touches are rebuilt;
// the others are shared with s. A changed campaign that is not active simply
// leaves the index.
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
	for country, p := range s.parts {
		for id := range gone {
			if ref, ok := p.byID[id]; ok && ref.self >= 0 {
				touched[country] = true
				break
			}
		}
	}
	n := &Snapshot{counters: s.counters, parts: make(map[int32]*partition, len(s.parts)+1)}
	for country, p := range s.parts {
		if !touched[country] {
			n.parts[country] = p
		}
	}
	for country := range touched {
		var defs []*Campaign
		if old := s.parts[country]; old != nil {
			defs = make([]*Campaign, 0, len(old.camps)+len(changed))
			for i := range old.camps {
				if !gone[old.camps[i].id] {
					defs = append(defs, old.camps[i].def)
				}
			}
		}
		for i := range changed {
			if c := &changed[i]; c.Status == StatusActive && c.CountryID == country {
				defs = append(defs, c)
			}
		}
		if len(defs) > 0 {
			n.parts[country] = buildPartition(defs, s.counters)
		}
	}
	return n
}

// Counters returns the counters the snapshot reads.
func (s *Snapshot) Counters() *Counters { return s.counters }

// Len returns the number of active campaigns indexed.
func (s *Snapshot) Len() int {
	n := 0
	for _, p := range s.parts {
		n += len(p.camps)
	}
	return n
}

// Campaign returns the definition of an indexed (active) campaign.
func (s *Snapshot) Campaign(id int64) (*Campaign, bool) {
	for _, p := range s.parts {
		if ref, ok := p.byID[id]; ok && ref.self >= 0 {
			return p.camps[ref.self].def, true
		}
	}
	return nil, false
}

// IndexBytes estimates the memory the index holds beyond the campaign
// definitions themselves; benchmarks report it per campaign.
func (s *Snapshot) IndexBytes() int {
	n := 0
	for _, p := range s.parts {
		n += p.bytes()
	}
	return n
}
