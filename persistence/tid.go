package persistence

import (
	"math"
	"strconv"
)

// A session's transaction id (tid) is 32 lower-case hex digits: 5 that name the block of 2^20
// session ids its id falls in, then 27 random ones. Sessions are partitioned by id
// (partitions.go), and a tid alone would make every callback's lookup probe the tid index of
// every partition, a year of them; with the block, the lookup reads the one or two partitions
// that hold it. The block leads so that the tid index stays in time order: each entry inserts
// its tid among the latest block's, a range of index pages that stays in memory, rather than
// at a random page of a partition's whole index (which logged a full-page image for about a
// third of the entries after each checkpoint on a partition of ten million sessions). A tid
// whose session is not in its block (sessions stored before tids carried one, or before the
// block led, test sessions) is still found, by a second lookup over every partition. The block
// tells a buyer how many sessions the exchange stored only to within a million, which is no
// secret worth the cost of hiding it.
const (
	tidLen       = 32
	tidBlockLen  = 5  // hex digits of the block
	tidBlockBits = 20 // ids per block: 2^20
)

// SessionTID is the tid of the session id whose random part is random (a random tid of
// 32 hex digits, whose first 27 follow id's block): what an entry stores, and what the
// bench's seed gives the sessions it writes with their ids.
func SessionTID(random string, id int64) string {
	if len(random) != tidLen {
		return random
	}
	block := strconv.FormatInt(id>>tidBlockBits, 16)
	if len(block) > tidBlockLen {
		return random // ids beyond 2^40: no block, found by the full lookup
	}
	b := make([]byte, 0, tidLen)
	for range tidBlockLen - len(block) {
		b = append(b, '0')
	}
	b = append(b, block...)
	return string(append(b, random[:tidLen-tidBlockLen]...))
}

// tidBlock returns the id range [lo, hi) that tid names, if it has the form of a tid.
func tidBlock(tid string) (lo, hi int64, ok bool) {
	if len(tid) != tidLen {
		return 0, 0, false
	}
	block, err := strconv.ParseUint(tid[:tidBlockLen], 16, 32)
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
