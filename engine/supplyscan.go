package engine

import "math/bits"

// supplyScan answers, for one partition and one country's sample of
// participants, which sampled participants could fill each campaign, a
// word-parallel set of up to supplySample participants at a time: the
// participants' codes are turned around into one set per (question, code)
// and per posted condition, so that a condition's set is the union of the
// sets of its codes, a quota's the intersection of its conditions', and a
// campaign's is computed once for the whole sample instead of once per
// participant (100k campaigns × 1,000 participants).
type supplyScan struct {
	part  *partition
	words int        // words per set
	codes [][]uint64 // by question slot × 128 + code: the set of participants with that code (nil: none)
	post  map[uint32][]uint64
	dev   map[uint8][]uint64 // by device mask: participants with one of its devices
	all   []uint64           // every sampled participant
	tmp   [3][]uint64        // quota, open, blocked sets of the campaign at hand
	ps    []*Participant     // the sample, by bit
	rates []float64          // their daily rates, by bit
}

func newSupplyScan(part *partition, ps []*Participant, rates []float64) *supplyScan {
	w := (len(ps) + 63) / 64
	s := &supplyScan{part: part, words: w, codes: make([][]uint64, len(part.qids)*maskCodes),
		post: make(map[uint32][]uint64), dev: make(map[uint8][]uint64), all: make([]uint64, w), ps: ps, rates: rates}
	for i := range s.tmp {
		s.tmp[i] = make([]uint64, w)
	}
	pm := make([][2]uint64, len(part.qids))
	for i, p := range ps {
		word, bit := i/64, uint64(1)<<(i%64)
		s.all[word] |= bit
		clear(pm)
		part.compileAnswers(pm, p, func(sp span) {
			for _, c := range part.posts[sp.off : sp.off+sp.n] {
				set := s.post[c]
				if set == nil {
					set = make([]uint64, w)
					s.post[c] = set
				}
				set[word] |= bit
			}
		})
		for qs := range pm {
			for half, m := range pm[qs] {
				for ; m != 0; m &= m - 1 {
					k := qs*maskCodes + half*64 + bits.TrailingZeros64(m)
					if s.codes[k] == nil {
						s.codes[k] = make([]uint64, w)
					}
					s.codes[k][word] |= bit
				}
			}
		}
	}
	return s
}

// devices returns the set of sampled participants with one of the devices
// of mask (0: any device).
func (s *supplyScan) devices(mask uint8) []uint64 {
	if mask == 0 {
		return s.all
	}
	if set, ok := s.dev[mask]; ok {
		return set
	}
	set := make([]uint64, s.words)
	for i, p := range s.ps {
		if p.Device&mask != 0 {
			set[i/64] |= 1 << (i % 64)
		}
	}
	s.dev[mask] = set
	return set
}

// quota sets dst to the sampled participants meeting every condition of
// quota slot q, and reports whether any does.
func (s *supplyScan) quota(dst []uint64, q int32) bool {
	qm := &s.part.quotas[q]
	copy(dst, s.all)
	for c := qm.c0; c < qm.c0+qm.nc; c++ {
		cm := &s.part.conds[c]
		post := s.post[c]
		left := uint64(0)
		for w := range dst {
			if dst[w] == 0 {
				continue
			}
			m := uint64(0)
			if post != nil {
				m = post[w]
			}
			base := int(cm.qs) * maskCodes
			for half, mask := range cm.mask {
				for ; mask != 0; mask &= mask - 1 {
					if set := s.codes[base+half*64+bits.TrailingZeros64(mask)]; set != nil {
						m |= set[w]
					}
				}
			}
			dst[w] &= m
			left |= dst[w]
		}
		if left == 0 {
			return false
		}
	}
	return true
}

// campaign returns the summed daily rates of the sampled participants who
// pass slot c's device rule, meet one of its open non-global quotas and
// none of its full global ones (full tells which quota slots are full).
func (s *supplyScan) campaign(c int32, full []bool) float64 {
	cm := &s.part.camps[c]
	q, open, blocked := s.tmp[0], s.tmp[1], s.tmp[2]
	clear(open)
	anyOpen := false
	for i := cm.q0; i < cm.g0; i++ {
		if !full[i] && s.quota(q, int32(i)) {
			anyOpen = true
			for w := range open {
				open[w] |= q[w]
			}
		}
	}
	if !anyOpen {
		return 0
	}
	clear(blocked)
	for i := cm.g0; i < cm.q1; i++ {
		if full[i] && s.quota(q, int32(i)) {
			for w := range blocked {
				blocked[w] |= q[w]
			}
		}
	}
	dev := s.devices(cm.devices)
	sum := 0.0
	for w := range open {
		for m := open[w] & dev[w] &^ blocked[w]; m != 0; m &= m - 1 {
			sum += s.rates[w*64+bits.TrailingZeros64(m)]
		}
	}
	return sum
}
