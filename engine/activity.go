package engine

import (
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

// activityCell stores an Activity in atomics: day<<32 | bitmap in one word.
type activityCell struct {
	last atomic.Int64
	days atomic.Uint64
}

func (c *activityCell) touch(at int64) {
	for {
		old := c.last.Load()
		if at <= old || c.last.CompareAndSwap(old, at) {
			break
		}
	}
	d := utcDay(at)
	for {
		old := c.days.Load()
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
		if c.days.CompareAndSwap(old, uint64(day)<<32|uint64(bm)) {
			return
		}
	}
}

func (c *activityCell) read() Activity {
	v := c.days.Load()
	return Activity{LastActive: c.last.Load(), Day: int64(v >> 32), Days: uint32(v)}
}
