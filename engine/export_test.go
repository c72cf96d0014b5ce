package engine

import (
	"fmt"
	"slices"
)

// SetPanelCompactMin lowers the garbage a panel shard tolerates before it
// compacts its arena, so that a small test reaches compaction; it returns
// the function that restores the default.
func SetPanelCompactMin(n int) (restore func()) {
	old := panelCompactMin
	panelCompactMin = n
	return func() { panelCompactMin = old }
}

// Raises returns how many conversion bound raises the counters have logged.
func (c *Counters) Raises() uint64 { return c.raises.Load() }

// Rebuild republishes the current campaigns as a snapshot built whole, under
// the current allocation state: what RefreshAllocation published before it
// reweighed the partitions in place.
func (e *Engine) Rebuild() {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.snap.Store(build(e.snap.Load().campaigns(), e.counters, e.alloc, nil))
}

// SharesIndex reports whether s and o share the base index of some country:
// whether one was reweighed from the other rather than rebuilt.
func (s *Snapshot) SharesIndex(o *Snapshot) bool {
	for id, c := range s.parts {
		if d := o.parts[id]; d != nil && d.base == c.base {
			return true
		}
	}
	return false
}

// RefreshOrders recomputes the rank order of every partition of s now, as a
// match asks once enough bounds were raised: a reorder of the raised
// campaigns or, every fullRefreshEvery-th time, a full sort.
func (s *Snapshot) RefreshOrders() {
	for _, c := range s.parts {
		c.base.refresh()
		if c.delta != nil {
			c.delta.refresh()
		}
	}
}

// PositionsInStep returns how many positions of the rank orders of s name an
// exploring campaign, and the first position whose explorer entry is not its
// slot's exploration cap and campaign id or whose gate is not its slot's, as
// "country/position", or "" when every order is in step. It also checks what
// evaluation relies on by slot: a gate's quotas and conditions begin where
// the slot's do, non-global quotas' conditions follow one another, and
// every posting lists its conditions in ascending order.
func (s *Snapshot) PositionsInStep() (exploring int, bad string) {
	for id, c := range s.parts {
		for _, p := range []*partition{c.base, c.delta} {
			if p == nil {
				continue
			}
			ord := p.ord.Load()
			if some := slices.ContainsFunc(ord.x, func(x float64) bool { return x > 0 }); some != (ord.explorers != nil) {
				return exploring, fmt.Sprintf("%d: explorers %v with exploring campaigns %v", id, ord.explorers != nil, some)
			}
			if len(ord.gates) != len(ord.slots) {
				return exploring, fmt.Sprintf("%d: %d gates for %d positions", id, len(ord.gates), len(ord.slots))
			}
			for i, g := range ord.gates {
				if g != p.gates[ord.slots[i]] {
					return exploring, fmt.Sprintf("%d/%d gate", id, i)
				}
			}
			for s, g := range p.gates {
				m := &p.camps[s]
				if g.q0 != m.q0 || m.q0 < m.q1 && g.c0 != p.quotas[m.q0].c0 {
					return exploring, fmt.Sprintf("%d slot %d: gate's quotas from %d, conditions from %d", id, s, g.q0, g.c0)
				}
				for q := m.q0; q+1 < m.g0; q++ {
					if p.quotas[q+1].c0 != p.quotas[q].c0+p.quotas[q].nc {
						return exploring, fmt.Sprintf("%d slot %d: quota %d's conditions do not follow quota %d's", id, s, q+1, q)
					}
				}
			}
			for i, sp := range p.spans {
				if ps := p.posts[sp.off : sp.off+sp.n]; !slices.IsSorted(ps) {
					return exploring, fmt.Sprintf("%d posting %d not in ascending order: %v", id, i, ps)
				}
			}
			for i, e := range ord.explorers {
				slot := ord.slots[i]
				want := explorer{}
				if x := ord.x[slot]; x > 0 {
					want = explorer{x: x, id: p.cold[slot].id}
					exploring++
				}
				if e != want {
					return exploring, fmt.Sprintf("%d/%d", id, i)
				}
			}
		}
	}
	return exploring, ""
}

// QuotaWeight returns the bid-price weight the snapshot ranks quota id by (1
// when the quota has none, as an offer through it is scored) and whether
// the quota is indexed.
func (s *Snapshot) QuotaWeight(id int64) (float64, bool) {
	for _, c := range s.parts {
		for _, part := range c.partitions() {
			for q := range part.qdefs {
				if part.qdefs[q].ID == id {
					if qw := part.ord.Load().qw; qw != nil {
						return qw[q], true
					}
					return 1, true
				}
			}
		}
	}
	return 0, false
}
