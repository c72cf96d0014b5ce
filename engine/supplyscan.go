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

// scanSupply estimates, for every campaign, how many panel participants per
// day can fill one of its open quotas: each sampled participant of the
// country active in the last FeasibilityWindowDays counts with its daily
// participation rate when the campaign's device, open non-global quotas and
// global caps admit it. Per-participant rules (exclusions, entries,
// retargeting, daily caps) are left out: they do not change how scarce the
// campaign is.
func (s *Snapshot) scanSupply(panel *Panel, now int64, out map[int64]float64) {
	byCountry := sampleCountries(s, panel, now)
	for id, c := range s.parts {
		sm := byCountry[id]
		parts := []*partition{c.base}
		if c.delta != nil {
			parts = append(parts, c.delta)
		}
		for _, part := range parts {
			sums := make([]float64, len(part.camps))
			if sm != nil {
				// Which quotas are full is read once per scan, not once per participant, and
				// only the campaigns with an open non-global quota are scanned.
				full := make([]bool, len(part.quotas))
				for q := range part.quotas {
					qm := &part.quotas[q]
					full[q] = qm.counter.full(qm.num, qm.clickBalanced)
				}
				open := make([]int32, 0, len(part.camps))
				for slot := range part.camps {
					cm := &part.camps[slot]
					for q := cm.q0; q < cm.g0; q++ {
						if !full[q] {
							open = append(open, int32(slot))
							break
						}
					}
				}
				scan := newSupplyScan(part, sm.ps, sm.rates)
				for _, slot := range open {
					sums[slot] = scan.campaign(slot, full)
				}
			}
			scale := 0.0
			if sm != nil && len(sm.ps) > 0 {
				scale = float64(sm.active) / float64(len(sm.ps))
			}
			for slot := range part.camps {
				out[part.cold[slot].id] = sums[slot] * scale
			}
		}
	}
}

// sampleCountries samples, for every country with campaigns in s, the
// panel's participants active in the last FeasibilityWindowDays with their
// daily participation rates (supplySampler).
func sampleCountries(s *Snapshot, panel *Panel, now int64) map[int32]*supplySampler {
	since := now - FeasibilityWindowDays*secondsPerDay
	byCountry := make(map[int32]*supplySampler, len(s.parts))
	panel.Range(func(p *Participant, a Activity) bool {
		if s.parts[p.CountryID] == nil || a.LastActive <= since {
			return true
		}
		sm := byCountry[p.CountryID]
		if sm == nil {
			sm = new(supplySampler)
			byCountry[p.CountryID] = sm
		}
		sm.offer(p, float64(max(a.ActiveDays(now, FeasibilityWindowDays), 1))/FeasibilityWindowDays)
		return true
	})
	for _, sm := range byCountry {
		sm.finish()
	}
	return byCountry
}
