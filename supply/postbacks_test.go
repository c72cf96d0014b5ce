package supply_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// outboxRow inserts a postback of publisher pub in a given delivery state, never due (the
// server's worker leaves it alone), and returns its id.
func outboxRow(t *testing.T, s *apptest.Server, pub int64, tid, state string) int64 {
	t.Helper()
	cols := map[string]string{
		"untried":   `0, NULL, NULL, NULL`,
		"retrying":  `2, 'status 500', NULL, NULL`,
		"dead":      `9, 'status 503', NULL, now()`,
		"delivered": `1, NULL, now(), NULL`,
	}[state]
	var id int64
	if err := s.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`INSERT INTO postback_outbox
		(tid, kind, publisher_id, url, next_attempt_at, attempts, last_error, delivered_at, dead_at)
		VALUES ($1, 'outcome', $2, 'http://127.0.0.1:1/pb?sech=x', now() + interval '1 day', %s) RETURNING id`, cols),
		tid, pub).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPostbackList(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p, other := newPartner(t, s), newPartner(t, s)
	ids := map[string]int64{}
	for _, st := range []string{"untried", "retrying", "dead", "delivered"} {
		ids[st] = outboxRow(t, s, p.ID, "tid-"+st+"-"+itoa(p.ID), st)
		outboxRow(t, s, other.ID, "tid-"+st+"-"+itoa(other.ID), st)
	}
	type delivery struct {
		ID        int64   `json:"id"`
		TID       string  `json:"tid"`
		Status    string  `json:"status"`
		Attempts  int     `json:"attempts"`
		LastError *string `json:"last_error"`
		URL       *string `json:"url"`
	}
	type list struct {
		Postbacks    []delivery `json:"postbacks"`
		NextBeforeID int64      `json:"next_before_id"`
	}
	fetch := func(query string) list {
		t.Helper()
		var l list
		p.do(t, "GET", "/supply_api/v4/postbacks"+query, nil, nil).Expect(t, 200).Decode(t, &l)
		for _, d := range l.Postbacks {
			if d.URL != nil {
				t.Fatalf("a listing shows the signed URL: %+v", d)
			}
		}
		return l
	}
	idsOf := func(l list) []int64 {
		out := []int64{}
		for _, d := range l.Postbacks {
			out = append(out, d.ID)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"", []int64{ids["dead"], ids["retrying"]}}, // status=failed by default
		{"?status=failed", []int64{ids["dead"], ids["retrying"]}},
		{"?status=dead", []int64{ids["dead"]}},
		{"?status=pending", []int64{ids["retrying"], ids["untried"]}},
		{"?status=failed&limit=1", []int64{ids["dead"]}},
		{"?status=failed&limit=1&before_id=" + itoa(ids["dead"]), []int64{ids["retrying"]}},
	} {
		if got := idsOf(fetch(tc.query)); mustJSON(t, got) != mustJSON(t, tc.want) {
			t.Errorf("%s: ids %v, want %v", tc.query, got, tc.want)
		}
	}
	l := fetch("?status=failed")
	if d := l.Postbacks[0]; d.Status != "dead" || d.Attempts != 9 || d.LastError == nil || *d.LastError != "status 503" {
		t.Fatalf("dead row %+v", d)
	}
	if d := l.Postbacks[1]; d.Status != "retrying" || d.Attempts != 2 {
		t.Fatalf("retrying row %+v", d)
	}
	if l.NextBeforeID != 0 {
		t.Fatalf("a short page has a next page: %d", l.NextBeforeID)
	}
	if l = fetch("?limit=1"); l.NextBeforeID != ids["dead"] {
		t.Fatalf("next_before_id %d, want %d", l.NextBeforeID, ids["dead"])
	}
	for _, tc := range []struct{ query, field string }{
		{"?status=delivered", "status"},
		{"?limit=0", "limit"},
		{"?limit=1001", "limit"},
		{"?limit=x", "limit"},
		{"?before_id=-1", "before_id"},
	} {
		expectError(t, p.do(t, "GET", "/supply_api/v4/postbacks"+tc.query, nil, nil), 400, tc.field)
	}
	q := *p
	q.Token = "wrong"
	expectError(t, q.do(t, "GET", "/supply_api/v4/postbacks", nil, nil), 401, "token")
}
