package persistence

import (
	"math"
	"strconv"
)

// A session's transaction id (tid) is 32 lower-case hex digits: 27 random ones, then 5 that
// name the block of 2^20 session ids its id falls in. Sessions are partitioned by id
// (partitions.go), and a tid alone would make every callback's lookup probe the tid index of
// every partition, a year of them; with the block, the lookup reads the one or two partitions
// that hold it. A tid whose session is not in its block (sessions stored before tids carried
// one, test sessions, the bench's seeded history) is still found, by a second lookup over every
// partition. The block tells a buyer how many sessions the exchange stored only to within a
// million, which is no secret worth the cost of hiding it.
const (
	tidLen       = 32
	tidBlockLen  = 5  // hex digits of the block
	tidBlockBits = 20 // ids per block: 2^20
)

// SessionTID is the tid of the session id whose random part is random (a random tid of
// 32 hex digits, whose last 5 are replaced by id's block): what an entry stores, and what
// the bench's seed gives the sessions it writes with their ids.
func SessionTID(random string, id int64) string {
	if len(random) != tidLen {
		return random
	}
	block := strconv.FormatInt(id>>tidBlockBits, 16)
	if len(block) > tidBlockLen {
		return random // ids beyond 2^40: no block, found by the full lookup
	}
	b := make([]byte, 0, tidLen)
	b = append(b, random[:tidLen-tidBlockLen]...)
	for range tidBlockLen - len(block) {
		b = append(b, '0')
	}
	return string(append(b, block...))
}

// tidBlock returns the id range [lo, hi) that tid names, if it has the form of a tid.
func tidBlock(tid string) (lo, hi int64, ok bool) {
	if len(tid) != tidLen {
		return 0, 0, false
	}
	block, err := strconv.ParseUint(tid[tidLen-tidBlockLen:], 16, 32)
	if err != nil {
		return 0, 0, false
	}
	lo = int64(block) << tidBlockBits
	return lo, lo + 1<<tidBlockBits, true
}

// tidRange is the id range to look tid's session up in when it must be there (a tid this
// process just stored): its block, or every id for a tid without one.
func tidRange(tid string) (lo, hi int64) {
	if lo, hi, ok := tidBlock(tid); ok {
		return lo, hi
	}
	return 0, math.MaxInt64
}
