package engine

import (
	"cmp"
	"slices"
)

// supplySampler keeps the supplySample active participants of a country
// with the lowest sampleKey, whatever order the panel hands them in (its
// shards are laid out by a per-process hash seed): the same panel gives the
// same sample and the same sums in every process and run.
type supplySampler struct {
	heap    []sampled // max-heap by key while offered; by participant id after finish
	active  int
	rateSum float64 // the daily rates of every active participant offered
	ps      []*Participant
	rates   []float64
}

type sampled struct {
	key  uint64
	p    *Participant
	rate float64
}

// sampleKey spreads participant ids uniformly (splitmix64's finaliser), so
// the lowest keys are a uniform sample.
func sampleKey(id int64) uint64 {
	x := uint64(id) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// offer counts p as active and keeps it in the sample if its key is among
// the lowest; p is copied only when kept (Range reuses it).
func (sm *supplySampler) offer(p *Participant, rate float64) {
	sm.active++
	sm.rateSum += rate
	k := sampleKey(p.ID)
	h := sm.heap
	if len(h) < supplySample {
		h = append(h, sampled{k, p.detached(), rate})
		for i := len(h) - 1; i > 0; { // sift up
			up := (i - 1) / 2
			if h[up].key >= h[i].key {
				break
			}
			h[up], h[i] = h[i], h[up]
			i = up
		}
		sm.heap = h
		return
	}
	if k >= h[0].key {
		return
	}
	h[0] = sampled{k, p.detached(), rate}
	for i := 0; ; { // sift down
		l, m := 2*i+1, i
		if l < len(h) && h[l].key > h[m].key {
			m = l
		}
		if r := l + 1; r < len(h) && h[r].key > h[m].key {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// finish orders the sample by participant id, so that sums over it are
// added in the same order whatever order the panel was read in.
func (sm *supplySampler) finish() {
	slices.SortFunc(sm.heap, func(a, b sampled) int { return cmp.Compare(a.p.ID, b.p.ID) })
	for _, e := range sm.heap {
		sm.ps = append(sm.ps, e.p)
		sm.rates = append(sm.rates, e.rate)
	}
	sm.heap = nil
}
