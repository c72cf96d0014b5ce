package persistence

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestSessionPartsOverlapping: the lookups of a block are those of every partition holding
// an id of it, in id order, and none other; a block past the list's end, read a moment ago,
// names the partitions it reaches and is not read again before partsReadEvery.
func TestSessionPartsOverlapping(t *testing.T) {
	ps := &sessionParts{read: time.Now(), list: []sessionPart{
		{from: 1, to: 100, sql: "a"},
		{from: 100, to: 250, sql: "b"},
		{from: 250, to: 1000, sql: "c"},
	}}
	for _, c := range []struct {
		lo, hi int64
		want   []string
	}{
		{0, 50, []string{"a"}},        // below the first partition's start
		{1, 100, []string{"a"}},       // exactly one
		{99, 101, []string{"a", "b"}}, // straddling a bound
		{100, 250, []string{"b"}},     // exactly the second
		{50, 300, []string{"a", "b", "c"}},
		{900, 1100, []string{"c"}}, // past the end, the list read a moment ago
		{1000, 2000, nil},          // no partition holds it
	} {
		// q is nil: a read of the list would panic.
		got, ok := ps.overlapping(context.Background(), nil, c.lo, c.hi, nil)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("[%d, %d): %q (%v), want %q", c.lo, c.hi, got, ok, c.want)
		}
	}
}
