package engine

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// activityDays is how many UTC days of activity a participant remembers.
const activityDays = 32

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
// activity words: last holds the latest activity (unix seconds, clamped to
// uint32) and days the UTC day<<32 | bitmap. Both are updated atomically, so
// concurrent touches under a shared lock are safe.
func touchActivity(last *uint32, days *uint64, at int64) {
	sec := uint32(min(max(at, 0), math.MaxUint32))
	for {
		old := atomic.LoadUint32(last)
		if sec <= old || atomic.CompareAndSwapUint32(last, old, sec) {
			break
		}
	}
	d := utcDay(at)
	for {
		old := atomic.LoadUint64(days)
		day, bm := int64(old>>32), uint32(old)
		switch {
		case old == 0:
			day, bm = d, 1
		case d > day:
			if d-day >= activityDays {
				bm = 0
			} else {
				bm <<= uint(d - day)
			}
			day, bm = d, bm|1
		case day-d < activityDays:
			bm |= 1 << uint(day-d)
		default:
			return // older than the window
		}
		if atomic.CompareAndSwapUint64(days, old, uint64(day)<<32|uint64(bm)) {
			return
		}
	}
}

// readActivity reads a panel row's activity words.
func readActivity(last *uint32, days *uint64) Activity {
	v := atomic.LoadUint64(days)
	return Activity{LastActive: int64(atomic.LoadUint32(last)), Day: int64(v >> 32), Days: uint32(v)}
}
