// Package quality is the participant-quality policy: the kinds of signal (evidence against
// a participant), the rule classes they count towards, the thresholds and the block
// decision. Storage is persistence's (quality_signals, quality_blocks); the in-memory
// blocked set that GET /campaigns and entry read is supply's, beside the other mirrors.
package quality

import "time"

// Kinds of quality signal (quality_signals.kind).
const (
	SignalQualityTerm       = "quality_term"       // a quality_term callback
	SignalRejected          = "rejected"           // a complete rejected by reject_completes or reconcile
	SignalSpeeder           = "speeder"            // a complete faster than a fraction of the LOI
	SignalSharedDevice      = "shared_device"      // a device seen with too many users of the publisher
	SignalMultiCountry      = "multi_country"      // impaneled in more than one country within 24 h
	SignalImplausibleAge    = "implausible_age"    // AGE moved backwards or by more than a year
	SignalImplausibleGender = "implausible_gender" // GENDER flipped more than once
)

// Rule classes: what a block names (never the thresholds).
const (
	ClassOutcomes    = "outcomes"
	ClassSpeeding    = "speeding"
	ClassDuplicates  = "duplicates"
	ClassImplausible = "implausible_profile"
)

// Classes lists the rule classes in the order decisions consider them.
var Classes = []string{ClassDuplicates, ClassImplausible, ClassSpeeding, ClassOutcomes}

// SignalClass is the rule class of a signal kind.
func SignalClass(kind string) string {
	switch kind {
	case SignalQualityTerm, SignalRejected:
		return ClassOutcomes
	case SignalSpeeder:
		return ClassSpeeding
	case SignalSharedDevice, SignalMultiCountry:
		return ClassDuplicates
	default:
		return ClassImplausible
	}
}

// Policy decides blocks from signals. Zero values take the defaults.
type Policy struct {
	// Window: signals older than this no longer count (default 30 days). Signals older than
	// the participant's latest decision (a block or its lifting) never count again.
	Window time.Duration
	// BlockFor is how long a block lasts (default 30 days).
	BlockFor time.Duration
	// Thresholds: a participant with at least this many counted signals of a rule class is
	// blocked. Defaults: outcomes 3, speeding 3, duplicates 1, implausible_profile 1. A
	// negative threshold turns the class off.
	Thresholds map[string]int
}

// DefaultThresholds are the thresholds a zero Policy uses.
func DefaultThresholds() map[string]int {
	return map[string]int{ClassOutcomes: 3, ClassSpeeding: 3, ClassDuplicates: 1, ClassImplausible: 1}
}

// WithDefaults fills what p leaves empty.
func (p Policy) WithDefaults() Policy {
	if p.Window <= 0 {
		p.Window = 30 * 24 * time.Hour
	}
	if p.BlockFor <= 0 {
		p.BlockFor = 30 * 24 * time.Hour
	}
	th := DefaultThresholds()
	for k, v := range p.Thresholds {
		th[k] = v
	}
	p.Thresholds = th
	return p
}

// Decide is the block decision for a participant that is not blocked now: the first rule
// class (in Classes order) whose counted signals reach its threshold, or "" for no block.
// counts holds the signals per class that count (within Window, after the latest decision).
func (p Policy) Decide(counts map[string]int) string {
	for _, c := range Classes {
		if th := p.Thresholds[c]; th > 0 && counts[c] >= th {
			return c
		}
	}
	return ""
}
