package persistence

// The lookups by tid within a block, for the test of their partition pruning.
const (
	SessionInBlockSQL  = sessionInBlockSQL
	SessionsInBlockSQL = sessionsInBlockSQL
)
