package engine

// A campaign's gate is a necessary condition of all its non-global quotas,
// kept in its hot struct: most campaigns a participant does not qualify for
// fail on the gate, and evaluate refuses them without reading their quotas
// and conditions, two cache misses a campaign on a large market. The
// balanced allocation raises hard quotas, which few participants meet, to
// the top of the walk, so it gains the most.

import "math/bits"

// gateOf returns campaign m's gate (campMeta.gateQS, gate): among the
// questions that every non-global quota conditions by codes alone, the one
// whose union mask has the fewest codes, the likeliest to refuse. A quota
// with two such conditions on the question needs both, so either one's mask
// is necessary; the first is taken.
func (p *partition) gateOf(m *campMeta) (int32, [2]uint64) {
	best, bestMask, bestBits := int32(-1), [2]uint64{}, maskCodes+1
	if m.g0 == m.q0 {
		return best, bestMask
	}
	first := &p.quotas[m.q0]
	for c := first.c0; c < first.c0+first.nc; c++ {
		if p.conds[c].posted {
			continue
		}
		qs := p.conds[c].qs
		union, ok := [2]uint64{}, true
		for q := m.q0; q < m.g0 && ok; q++ {
			mask, found := p.codesOnly(&p.quotas[q], qs)
			union[0], union[1], ok = union[0]|mask[0], union[1]|mask[1], found
		}
		if bits := popcount2(union); ok && bits < bestBits {
			best, bestMask, bestBits = int32(qs), union, bits
		}
	}
	return best, bestMask
}

// codesOnly returns the mask of quota qm's first condition on question slot
// qs that matches by codes 0..127 alone (found false: none).
func (p *partition) codesOnly(qm *quotaMeta, qs uint32) ([2]uint64, bool) {
	for c := qm.c0; c < qm.c0+qm.nc; c++ {
		if cm := &p.conds[c]; cm.qs == qs && !cm.posted {
			return cm.mask, true
		}
	}
	return [2]uint64{}, false
}

func popcount2(m [2]uint64) int { return bits.OnesCount64(m[0]) + bits.OnesCount64(m[1]) }
