package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// AllocationSplit divides participants among allocation policies for
// measuring them on real traffic (the --allocation-split flag,
// docs/allocation.md): each arm takes its share, in percent, of the
// participants, chosen by a salted hash of the participant id so that a
// participant stays in one arm and the arms are independent of every other
// hash the engine draws (ExplorationDraw, the supply sample). The zero
// value has no arms: no split.
type AllocationSplit struct {
	arms []splitArm
}

// splitArm is one policy and the end (exclusive, in 0..100) of its range
// of the participants' buckets.
type splitArm struct {
	policy Allocation
	share  uint8
	end    uint8
}

// splitSalt keeps the split's hash independent of the engine's other hashes
// of participant ids.
const splitSalt = 0x5b1f_2c8e_a7d3_9e41

// ParseAllocationSplit reads the --allocation-split flag:
// policy:share[,policy:share...], each policy a name ParseAllocation knows,
// at most once, each share a whole percent in 1..100, the shares summing
// to 100. Errors name the flag and the offending part.
func ParseAllocationSplit(s string) (AllocationSplit, error) {
	var sp AllocationSplit
	if strings.TrimSpace(s) == "" {
		return sp, fmt.Errorf("allocation-split: empty (want policy:share[,policy:share...], e.g. greedy:50,bidprice:50)")
	}
	total := 0
	for part := range strings.SplitSeq(s, ",") {
		name, share, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return AllocationSplit{}, fmt.Errorf("allocation-split: %q is not policy:share", part)
		}
		a, err := ParseAllocation(strings.TrimSpace(name))
		if err != nil {
			return AllocationSplit{}, fmt.Errorf("allocation-split: unknown policy %q (want greedy, balanced, edf or bidprice)", name)
		}
		if sp.Has(a) {
			return AllocationSplit{}, fmt.Errorf("allocation-split: policy %s given twice", a)
		}
		n, err := strconv.Atoi(strings.TrimSpace(share))
		if err != nil || n < 1 || n > 100 {
			return AllocationSplit{}, fmt.Errorf("allocation-split: share %q of %s is not a whole percent in 1..100", share, a)
		}
		total += n
		if total > 100 {
			break
		}
		sp.arms = append(sp.arms, splitArm{policy: a, share: uint8(n), end: uint8(total)})
	}
	if total != 100 {
		return AllocationSplit{}, fmt.Errorf("allocation-split: shares sum to %d, want 100", total)
	}
	return sp, nil
}

// Enabled reports whether the split has arms (the flag was given).
func (sp AllocationSplit) Enabled() bool { return len(sp.arms) > 0 }

// Has reports whether policy a is one of the split's arms.
func (sp AllocationSplit) Has(a Allocation) bool {
	for _, arm := range sp.arms {
		if arm.policy == a {
			return true
		}
	}
	return false
}

// Policies returns the split's policies in the flag's order.
func (sp AllocationSplit) Policies() []Allocation {
	out := make([]Allocation, len(sp.arms))
	for i, arm := range sp.arms {
		out[i] = arm.policy
	}
	return out
}

// Share returns the percent of participants policy a takes (0 when it is
// not an arm).
func (sp AllocationSplit) Share(a Allocation) int {
	for _, arm := range sp.arms {
		if arm.policy == a {
			return int(arm.share)
		}
	}
	return 0
}

// String returns the split as the flag spells it ("" without arms).
func (sp AllocationSplit) String() string {
	var b strings.Builder
	for i, arm := range sp.arms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", arm.policy, arm.share)
	}
	return b.String()
}

// Assign returns the policy that ranks the offers of participant id: the
// arm whose range holds the participant's bucket, a salted hash of the id
// into 0..99. It is a pure function of the split and the id, allocates
// nothing, and returns AllocationGreedy when the split has no arms.
func (sp AllocationSplit) Assign(participantID int64) Allocation {
	if len(sp.arms) == 0 {
		return AllocationGreedy
	}
	return sp.arms[sp.arm(participantID)].policy
}

// arm returns the index of participant id's arm (0 without arms).
func (sp *AllocationSplit) arm(participantID int64) int {
	if len(sp.arms) < 2 {
		return 0
	}
	b := splitBucket(participantID)
	for i, arm := range sp.arms {
		if b < arm.end {
			return i
		}
	}
	return len(sp.arms) - 1
}

// splitBucket maps a participant id to 0..99: the splitmix64 finalizer of
// the salted id times an odd constant, scaled by multiplication (no modulo bias).
func splitBucket(participantID int64) uint8 {
	x := (uint64(participantID) ^ splitSalt) * 0x9fb21c651e98df25
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return uint8((x >> 32) * 100 >> 32)
}
