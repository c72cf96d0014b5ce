package persistence

import (
	"strings"
	"testing"
)

// TestSessionTID: a tid names its id's block of 2^20 ids, keeps its random part, and is
// read back to that block; ids past the blocks five hex digits can name, and strings that
// are not tids, name none.
func TestSessionTID(t *testing.T) {
	random := strings.Repeat("ab", 16)
	for _, id := range []int64{1, 1<<20 - 1, 1 << 20, 123456789, 1<<40 - 1} {
		tid := SessionTID(random, id)
		if len(tid) != tidLen || tid[tidBlockLen:] != random[:tidLen-tidBlockLen] {
			t.Errorf("id %d: tid %q does not keep the random part of %q", id, tid, random)
		}
		lo, hi, ok := tidBlock(tid)
		if !ok || id < lo || id >= hi || hi-lo != 1<<20 {
			t.Errorf("id %d: tid %q names [%d, %d) %v", id, tid, lo, hi, ok)
		}
	}
	if tid := SessionTID(random, 1<<40); tid != random {
		t.Errorf("id 2^40: tid %q, want the random tid unchanged", tid)
	}
	for _, tid := range []string{"", "short", random + "0", strings.Repeat("z", 32), "-1234" + strings.Repeat("a", 27)} {
		if _, _, ok := tidBlock(tid); ok {
			t.Errorf("tidBlock(%q) named a block", tid)
		}
	}
}

// FuzzTIDBlock: tidBlock reads any string a callback carries without panicking, and names a
// block only for 32-character strings.
func FuzzTIDBlock(f *testing.F) {
	f.Add(strings.Repeat("0", 32))
	f.Add("")
	f.Fuzz(func(t *testing.T, tid string) {
		lo, hi, ok := tidBlock(tid)
		if ok && (len(tid) != tidLen || lo < 0 || hi-lo != 1<<tidBlockBits) {
			t.Fatalf("tidBlock(%q) = %d, %d", tid, lo, hi)
		}
	})
}
