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
