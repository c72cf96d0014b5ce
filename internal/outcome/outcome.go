// Package outcome is the one vocabulary of session outcomes (docs/rules.md §7): the strings a
// callback's path names, the sessions table stores, exports map and partner redirects and
// postbacks carry as status. Persistence, routing and payouts all spell them from here.
package outcome

// The four outcomes a callback decides, and the partner-facing status of a reversal.
const (
	Complete     = "complete"
	OverQuota    = "over_quota"
	QualityTerm  = "quality_term"
	Disqualified = "disqualified"
	// Reversed is no callback outcome: it is the status of the postback that tells a partner
	// a complete was rejected (reject_completes, reconcile).
	Reversed = "reversed"
)

// Valid reports whether s is one of the four outcomes a callback can decide.
func Valid(s string) bool {
	switch s {
	case Complete, OverQuota, QualityTerm, Disqualified:
		return true
	}
	return false
}
