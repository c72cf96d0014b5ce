package engine

import (
	"fmt"
	"math"
)

// Allocation names the policy that ranks a participant's eligible offers
// (docs/allocation.md). Eligibility never depends on it (docs/rules.md §11).
type Allocation uint8

const (
	// AllocationGreedy ranks by EPC alone.
	AllocationGreedy Allocation = iota
	// AllocationBalanced ranks by EPC × the campaign's weight (earliest
	// deadline and smallest remaining need first among the campaigns the
	// panel can still fill by their deadline) × a bounded exploration bonus
	// that grows with the uncertainty of the campaign's conversion estimate
	// (large for campaigns with few sessions).
	AllocationBalanced
	// AllocationEDF ranks by EPC × 1/(days left) among the campaigns the
	// panel can still fill by their deadline, and puts those that cannot
	// last: earliest deadline first with the rejection of late jobs, the
	// evaluation's baseline for deadline scheduling (docs/allocation.md).
	AllocationEDF
	// AllocationBidPrice ranks by EPC × the weight of the best open quota
	// the participant would fill: its payout net of the quota's prices, the
	// duals of the day's programme that allocates the panel's sessions to
	// the open quotas, each needing its remaining need at an even pace
	// over its days left (engine/bidprice.go, docs/allocation.md).
	AllocationBidPrice
)

// allocationNames are the policies' flag names, by value.
var allocationNames = [...]string{AllocationGreedy: "greedy", AllocationBalanced: "balanced", AllocationEDF: "edf", AllocationBidPrice: "bidprice"}

// String returns the policy's flag name.
func (a Allocation) String() string {
	if int(a) < len(allocationNames) {
		return allocationNames[a]
	}
	return fmt.Sprintf("allocation(%d)", a)
}

// Weighted reports whether the policy ranks with weights computed off the
// request path (Engine.RefreshAllocation must then run periodically).
func (a Allocation) Weighted() bool { return a != AllocationGreedy }

// ParseAllocation reads a policy name as the --allocation flag spells it.
func ParseAllocation(s string) (Allocation, error) {
	for a, name := range allocationNames {
		if s == name {
			return Allocation(a), nil
		}
	}
	return 0, fmt.Errorf("allocation: unknown policy %q (want greedy, balanced, edf or bidprice)", s)
}

// Balanced policy parameters; docs/allocation.md explains each.
const (
	// ExploreBonus is the largest exploration bonus: a campaign's score is
	// multiplied by 1 + explore·u, u a per-(participant, campaign) draw in
	// [0, 1) and explore at most ExploreBonus.
	ExploreBonus = 0.3
	// ExploreZ scales the exploration bonus with the uncertainty of the
	// conversion estimate: explore = ExploreZ × its standard error / the
	// estimate, so that the score's top reaches the upper end of a 2σ band
	// of the conversion, and shrinks as 1/√(sessions + ConversionPriorWeight).
	ExploreZ = 2
	// ExploreSessions is the number of sessions with an outcome from which
	// a campaign's estimate is taken as learned and it gets no exploration
	// bonus: the bound of every established campaign stays tight, which
	// keeps the matching walk short. A campaign the panel cannot fill by its
	// deadline gets none at all: most campaigns of a large market are of
	// that kind, and exploring them cost matching walks 22-30% over greedy
	// for no gain in the simulator.
	ExploreSessions = 100
	// needScale, needExp: a feasible campaign's need factor is
	// (needScale / (completes still needed per open quota + 1))^needExp,
	// 2 for a campaign one complete short of each open quota.
	needScale, needExp = 4, 0.5
	// urgencyExp: a feasible campaign's urgency factor is
	// (1 / days left)^urgencyExp, earliest deadline first.
	urgencyExp = 0.5
	// hardConversion, hardExp: a feasible campaign whose conversion
	// estimate c is below hardConversion is raised by
	// (hardConversion / c)^hardExp (its completes cost more visits, so
	// greedy ranking starves it; the root keeps the raise from costing the
	// partners' revenue).
	hardConversion, hardExp = 0.5, 0.6
	// learnFloor is the least weight of a feasible campaign still learning
	// its conversion (fewer than ExploreSessions sessions with an outcome)
	// whose work ahead is large (completes still needed / conversion ≥
	// ExploreSessions sessions): ranked as greedy would, not deferred. Its
	// schedule (whether it can finish, when it may wait) rests on its
	// conversion estimate, and it will take that many sessions anyway, so
	// taking the first ones now costs little and puts the schedule on its
	// real conversion; a campaign with little left finishes before its
	// estimate matters.
	learnFloor = 1.0
	// Bounds of the weight.
	weightMin, weightMax = 0.25, 4
	// supplySample is how many active participants per country the supply
	// scan looks at (those with the lowest sampleKey: the same sample in
	// every process); the sums are scaled to the country's active panel.
	supplySample = 1000
)

// AllocationInputs are the figures a campaign's balanced weight is computed
// from, all of them visible to the campaign's buyer in its own campaign
// (docs/rules.md §11): quotas, completes, days in field, sessions, and the
// panel's feasibility.
type AllocationInputs struct {
	// Target is the sum of the campaign's non-global quota targets; Needed
	// the part still open (target − completes − sessions in progress, per
	// quota, never below 0).
	Target, Needed float64
	// Open is the number of non-global quotas that still need completes.
	Open int
	// Sessions is the number of sessions that reached an outcome.
	Sessions int64
	// Conversion is the estimated chance that an entry completes.
	Conversion float64
	// SupplyPerDay is the expected number of panel participants per day
	// who can fill an open quota of the campaign; negative when unknown.
	SupplyPerDay float64
	// DaysInField is the campaign's field period (days, > 0); Elapsed the
	// days since it started, negative when unknown.
	DaysInField, Elapsed float64
}

// daysLeft is the campaign's field period left, in days: at least half a
// day, the whole period (DefaultDaysInField when unset) when its start is
// unknown.
func (in *AllocationInputs) daysLeft() float64 {
	days := in.DaysInField
	if days <= 0 {
		days = DefaultDaysInField
	}
	if in.Elapsed < 0 {
		return days
	}
	return max(days-in.Elapsed, 0.5)
}

// AllocationWeight returns the campaign's weight (within [0.25, 4]) and its
// exploration bonus cap (0..ExploreBonus). A campaign is ranked by EPC ×
// weight × (1 + explore·ExplorationDraw(participant, campaign)).
//
// The weight schedules quotas the way one maximises the number of jobs
// finished by their deadlines (earliest deadline first, rejecting the jobs
// that cannot finish): a campaign the panel cannot fill before its field
// period ends (completes still needed > supply per day × days left ×
// conversion) gets 1, ranked by EPC alone, taking offers only where nothing
// that can still finish ranks higher. A feasible one gets need × urgency ×
// hardness: need = (needScale / (needed per open quota + 1))^needExp, so
// the quotas closest to full go first; urgency = (1 / days left)^urgencyExp,
// so the earliest deadlines go first; hardness = max(hardConversion /
// conversion, 1)^hardExp, so a low-conversion campaign that can still
// finish is not starved by its low EPC. Unknown supply counts as feasible; an unknown
// start as a full field period left.
// Exploration is ExploreZ standard errors of the conversion estimate
// (√(c(1−c)/(sessions + ConversionPriorWeight))) relative to the estimate
// c, at most ExploreBonus: large for a campaign with few sessions,
// shrinking as its sessions grow, and 0 from ExploreSessions sessions on,
// for a campaign that cannot finish, and for an estimate of 0 or 1.
func AllocationWeight(in AllocationInputs) (weight, explore float64) {
	left := in.daysLeft()
	needed := max(in.Needed, 0)
	exploreUntil := int64(ExploreSessions)
	switch {
	case in.Target > 0 && needed == 0:
		// Every non-global quota is full (or its last sessions are in
		// progress): nobody can be offered it, and the lowest weight keeps
		// it out of the way of matching walks.
		weight = weightMin
	case in.SupplyPerDay >= 0 && needed > in.SupplyPerDay*left*max(in.Conversion, 0):
		weight = 1
		exploreUntil = 0 // see ExploreSessions
	default:
		per := needed
		if in.Open > 0 {
			per = needed / float64(in.Open)
		}
		weight = math.Pow(needScale/(per+1), needExp) * math.Pow(1/left, urgencyExp)
		if in.Conversion > 0 {
			weight *= math.Pow(max(hardConversion/in.Conversion, 1), hardExp)
		}
		weight = clamp(weight, weightMin, weightMax)
		if c := in.Conversion; c > 0 && in.Sessions < ExploreSessions && needed/c >= ExploreSessions {
			// Still learning, with at least ExploreSessions sessions of work
			// ahead: ranked at least as greedy would rank it (see learnFloor).
			weight = max(weight, learnFloor)
		}
	}
	if c := in.Conversion; c > 0 && c < 1 && in.Sessions < exploreUntil {
		sd := math.Sqrt(c * (1 - c) / (float64(max(in.Sessions, 0)) + ConversionPriorWeight))
		explore = min(ExploreZ*sd/c, ExploreBonus)
	}
	return weight, explore
}

// edfRejected is the EDF weight of a campaign that cannot finish by its
// deadline: below 1/days left of any field period (at most a year), so that
// every campaign that can still finish ranks first.
const edfRejected = 1e-3

// EDFWeight returns the weight of the earliest-deadline-first baseline: 1 /
// days left (at least half a day; a full field period when the start is
// unknown) for a campaign the panel can still fill by its deadline (or whose
// supply is not known yet), edfRejected for one it cannot. Its score is EPC ×
// weight, so EPC orders campaigns of the same deadline. It has no other
// factor: the evaluation compares every policy with it (docs/allocation.md).
func EDFWeight(in AllocationInputs) float64 {
	left := in.daysLeft()
	if in.SupplyPerDay >= 0 && max(in.Needed, 0) > in.SupplyPerDay*left*max(in.Conversion, 0) {
		return edfRejected
	}
	return 1 / left
}

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }

// ExplorationDraw is the participant's deterministic draw in [0, 1) for a
// campaign's exploration bonus: a hash of the two ids, so the same
// participant sees the same ranking for the same weights, while different
// participants explore different campaigns.
func ExplorationDraw(participantID, campaignID int64) float64 {
	x := uint64(participantID)*0x9e3779b97f4a7c15 ^ uint64(campaignID)*0xc2b2ae3d27d4eb4f
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
