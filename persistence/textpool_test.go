package persistence

import (
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// Kept lists equal what was scanned, share the storage of equal strings, and are cut so
// that appending to one never writes into the next.
func TestTextPoolKeep(t *testing.T) {
	var p textPool
	scanned := [][]string{{"10001", "10002"}, nil, {"10002", "paris"}, {}, {strings.Repeat("z", 70_000)}}
	var kept [][]string
	for _, s := range scanned {
		in := slices.Clone(s)
		k := p.keep(in)
		for i := range in {
			in[i] = "overwritten" // the scan buffer is reused for the next row
		}
		kept = append(kept, k)
	}
	for i, s := range scanned {
		if !slices.Equal(kept[i], s) || (len(s) == 0) != (kept[i] == nil) {
			t.Fatalf("list %d: kept %q, scanned %q", i, kept[i], s)
		}
	}
	if unsafe.StringData(kept[0][1]) != unsafe.StringData(kept[2][0]) {
		t.Error("two equal texts are stored twice")
	}
	kept[0] = append(kept[0], "appended")
	if kept[2][0] != "10002" {
		t.Errorf("appending to one list changed the next: %q", kept[2])
	}
	big := make([]string, textSlab+1)
	for i := range big {
		big[i] = "x"
	}
	if k := p.keep(big); len(k) != len(big) {
		t.Errorf("a list longer than a slab kept %d of %d", len(k), len(big))
	}
}
