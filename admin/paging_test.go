package admin_test

import (
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestCampaignsPaging pages GET /api/v1/campaigns: page and per_page select a slice in id
// order with the total in X-Total-Count; without them the answer is the whole list, as
// before; bad values are a 422 naming the parameter.
func TestCampaignsPaging(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	other := s.NewBuyer(t)
	createCampaign(t, other, nil) // another buyer's campaign is in no page nor total
	var ids []int64
	for range 5 {
		ids = append(ids, createCampaign(t, b, nil))
	}
	list := func(query string) ([]int64, string) {
		t.Helper()
		r := b.Do(t, "GET", "/api/v1/campaigns"+query, nil).Expect(t, 200)
		var cs []struct {
			ID int64 `json:"id"`
		}
		r.Decode(t, &cs)
		got := []int64{}
		for _, c := range cs {
			got = append(got, c.ID)
		}
		return got, r.Header.Get("X-Total-Count")
	}
	for _, tc := range []struct {
		query string
		want  []int64
		total string
	}{
		{"", ids, ""},
		{"?country_language_id=1", ids, ""},
		{"?page=1&per_page=2", ids[0:2], "5"},
		{"?page=2&per_page=2", ids[2:4], "5"},
		{"?page=3&per_page=2", ids[4:5], "5"},
		{"?page=4&per_page=2", []int64{}, "5"},
		{"?per_page=3", ids[0:3], "5"},
		{"?page=1", ids, "5"},
		{"?page=2", []int64{}, "5"},
		{"?page=1&per_page=1000", ids, "5"},
		{"?page=2147483647&per_page=1000", []int64{}, "5"},
		{"?country_language_id=1&page=2&per_page=4", ids[4:5], "5"},
		{"?country_language_id=2&page=1&per_page=4", []int64{}, "0"},
	} {
		got, total := list(tc.query)
		if total != tc.total || len(got) != len(tc.want) {
			t.Errorf("%q: ids %v total %q, want %v total %q", tc.query, got, total, tc.want, tc.total)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: ids %v, want %v", tc.query, got, tc.want)
				break
			}
		}
	}
	for _, tc := range []struct{ query, field string }{
		{"?page=0", "page"},
		{"?page=-1", "page"},
		{"?page=abc", "page"},
		{"?page=", "page"},
		{"?page=1.5", "page"},
		{"?page=2147483648", "page"},
		{"?page=99999999999999999999", "page"},
		{"?per_page=0", "per_page"},
		{"?per_page=1001", "per_page"},
		{"?page=1&per_page=x", "per_page"},
		{"?per_page=-5&page=1", "per_page"},
	} {
		r := b.Do(t, "GET", "/api/v1/campaigns"+tc.query, nil)
		if msg := r.Message(t); r.Status != 422 || !strings.HasPrefix(msg, tc.field+" must be") {
			t.Errorf("%q: %d %q, want 422 naming %s", tc.query, r.Status, msg, tc.field)
		}
	}
}
