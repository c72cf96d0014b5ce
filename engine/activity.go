package engine

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// activityDays is how many UTC days of activity a participant remembers.
const activityDays = 32

// ActivityDays is activityDays for the loaders of entry history: an entry older than this
// many days before now no longer counts as activity (ActiveDays), so only its blocking of
// a reentry or a related campaign can still matter.
const ActivityDays = activityDays

// Activity is a participant's recent activity: the UTC day of its last
// activity and a bitmap of the days it was active (bit i = Day−i).
type Activity struct {
	LastActive int64  // unix seconds of the latest activity
	Day        int64  // UTC day number of LastActive
	Days       uint32 // bit i set: active on UTC day Day−i
}

// ActiveDays counts the days the participant was active among the window
// UTC days ending on the day of now (window at most 32).
func (a Activity) ActiveDays(now int64, window int) int {
	window = min(window, activityDays)
	shift := utcDay(now) - a.Day // days since the bitmap's day 0
	if shift < 0 {
		shift = 0
	}
	if shift >= int64(window) {
		return 0
	}
	keep := window - int(shift) // bits 0..keep-1 fall inside the window
	m := uint32(uint64(1)<<keep - 1)
	return bits.OnesCount32(a.Days & m)
}

// touchActivity records activity at `at` (unix seconds) in a panel row's
// activity word: the latest activity (unix seconds, clamped to uint32) in
// the high half, the bitmap of active days in the low half, bit i standing
// for the UTC day of the latest activity minus i. One word updated by CAS,
// so concurrent touches under a shared lock are safe.
func touchActivity(w *uint64, at int64) {
	for {
		old := atomic.LoadUint64(w)
		v, changed := touchedActivity(old, at)
		if !changed || atomic.CompareAndSwapUint64(w, old, v) {
			return
		}
	}
}

// touchedActivity returns the activity word old with activity at `at` recorded, and whether
// it differs (touchActivity; a writer holding its shard's exclusive lock may store the
// result without a CAS: no reader or toucher runs then).
func touchedActivity(old uint64, at int64) (uint64, bool) {
	sec := uint32(min(max(at, 0), math.MaxUint32))
	d := utcDay(int64(sec))
	last, bm := uint32(old>>32), uint32(old)
	day := utcDay(int64(last))
	switch {
	case old == 0:
		last, bm = sec, 1
	case d > day:
		if d-day >= activityDays {
			bm = 0
		} else {
			bm <<= uint(d - day)
		}
		last, bm = sec, bm|1
	case day-d < activityDays:
		last, bm = max(last, sec), bm|1<<uint(day-d)
	default:
		return old, false // older than the window (and than the latest activity)
	}
	v := uint64(last)<<32 | uint64(bm)
	return v, v != old
}

// readActivity reads a panel row's activity word.
func readActivity(w *uint64) Activity {
	v := atomic.LoadUint64(w)
	if v == 0 {
		return Activity{}
	}
	last := int64(v >> 32)
	return Activity{LastActive: last, Day: utcDay(last), Days: uint32(v)}
}
