package persistence

import (
	"slices"
	"testing"

	"github.com/switchboard/switchboard/internal/mirror"
)

// TestCountsPayloads: the campaigns of a counts notification come back from ParseCounts as
// sent, each payload under NOTIFY's limit, the quota-only ones marked; and a listener of
// the release before (mirror.IDs) reads the same campaigns from either kind, so that it
// re-reads them wholly rather than missing them.
func TestCountsPayloads(t *testing.T) {
	ids := make([]int64, 3000)
	for i := range ids {
		ids[i] = 1_000_000_000 + int64(i)*7919
	}
	for _, tc := range []struct {
		prefix     string
		quotasOnly bool
	}{{"", false}, {quotasOnlyField, true}} {
		chunks := chunkPayloads(tc.prefix, ids)
		if len(chunks) < 2 {
			t.Fatalf("prefix %q: %d payloads for %d ids, want several", tc.prefix, len(chunks), len(ids))
		}
		var parsed, legacy []int64
		for _, c := range chunks {
			if len(c) >= 8000 {
				t.Errorf("prefix %q: a payload of %d bytes", tc.prefix, len(c))
			}
			ParseCounts(c, func(id int64, quotasOnly bool) {
				if quotasOnly != tc.quotasOnly {
					t.Fatalf("prefix %q: campaign %d read with quotasOnly %v", tc.prefix, id, quotasOnly)
				}
				parsed = append(parsed, id)
			})
			mirror.IDs(c, func(id int64) { legacy = append(legacy, id) })
		}
		if !slices.Equal(parsed, ids) || !slices.Equal(legacy, ids) {
			t.Errorf("prefix %q: parsed %d ids, legacy %d, want the %d sent in order", tc.prefix, len(parsed), len(legacy), len(ids))
		}
	}
	var got []int64
	ParseCounts("q", func(id int64, _ bool) { got = append(got, id) })
	ParseCounts("x,12,,-,13", func(id int64, quotasOnly bool) {
		if quotasOnly {
			t.Error("an unknown first field read as quota-only")
		}
		got = append(got, id)
	})
	if !slices.Equal(got, []int64{12, 13}) {
		t.Errorf("ParseCounts of odd payloads: %v, want [12 13]", got)
	}
}
