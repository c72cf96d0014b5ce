package engine

import "math/bits"

// gate is what the walk can refuse a campaign by without reading its slot's
// arrays, which lie at random in memory: the devices it accepts, and one
// question that every one of its non-global quotas conditions by codes
// 0..127 alone, with the union of those conditions' masks. A participant
// with none of those codes matches none of its quotas. Walks under the
// balanced allocation meet many campaigns few participants qualify for
// (docs/allocation.md), and most are refused here.
type gate struct {
	mask    [2]uint64
	qs      uint32
	devices uint8 // 0: all
	coded   bool  // qs and mask hold a question
	never   bool  // no non-global quota: never open
	// q0 and c0 are where the slot's quotas and their conditions begin (campMeta.q0 and its
	// first quota's c0): evaluation reads its first quota and condition without waiting for
	// the campaign's own line, three reads at random in memory issued at once, not in turn.
	q0 int32
	c0 uint32
}

// refuses reports whether the campaign cannot be offered to a participant
// with device and answers compiled in pm.
func (g *gate) refuses(pm [][2]uint64, device uint8) bool {
	if g.never || g.devices != 0 && g.devices&device == 0 {
		return true
	}
	if !g.coded {
		return false
	}
	m := &pm[g.qs]
	return m[0]&g.mask[0]|m[1]&g.mask[1] == 0
}

// placeGates computes every slot's gate. Of the questions every non-global
// quota of a campaign conditions by codes alone, the gate keeps the one
// likely to refuse the most participants: the fewest codes in the union of
// the campaign's masks against the codes any condition of the partition
// names for that question (two genders of two, a decade of ages of eighty).
func (p *partition) placeGates() {
	names := make([]int, len(p.qids)) // codes named per question slot
	{
		all := make([][2]uint64, len(p.qids))
		for i := range p.conds {
			c := &p.conds[i]
			all[c.qs][0] |= c.mask[0]
			all[c.qs][1] |= c.mask[1]
		}
		for i, m := range all {
			names[i] = bits.OnesCount64(m[0]) + bits.OnesCount64(m[1])
		}
	}
	p.gates = make([]gate, len(p.camps))
	for s := range p.camps {
		m := &p.camps[s]
		g := &p.gates[s]
		g.devices = m.devices
		g.q0, g.c0 = m.q0, uint32(len(p.conds))
		if m.q0 < m.q1 {
			g.c0 = p.quotas[m.q0].c0
		}
		if m.q0 == m.g0 {
			g.never = true
			continue
		}
		best := 2.0
		first := &p.quotas[m.q0]
		for c := first.c0; c < first.c0+first.nc; c++ {
			qs := p.conds[c].qs
			union, ok := p.unionOn(m, qs)
			if !ok {
				continue
			}
			n := bits.OnesCount64(union[0]) + bits.OnesCount64(union[1])
			if share := float64(n) / float64(max(names[qs], 1)); share < best {
				best = share
				g.coded, g.qs, g.mask = true, qs, union
			}
		}
	}
}

// unionOn returns the union of the masks by which every non-global quota of
// campaign m conditions question slot qs by codes alone (its first such
// condition), and false when one of them has no such condition.
func (p *partition) unionOn(m *campMeta, qs uint32) ([2]uint64, bool) {
	var union [2]uint64
	for q := m.q0; q < m.g0; q++ {
		qm := &p.quotas[q]
		found := false
		for c := qm.c0; c < qm.c0+qm.nc; c++ {
			if cd := &p.conds[c]; cd.qs == qs && !cd.posted {
				union[0] |= cd.mask[0]
				union[1] |= cd.mask[1]
				found = true
				break
			}
		}
		if !found {
			return union, false
		}
	}
	return union, true
}
