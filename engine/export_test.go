package engine

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
	e.snap.Store(build(e.snap.Load().campaigns(), e.counters, e.alloc))
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
