package supply_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
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
		{"", []int64{ids["dead"], ids["retrying"]}}, // status=retrying,dead by default
		{"?status=retrying,dead", []int64{ids["dead"], ids["retrying"]}},
		{"?status=dead,retrying", []int64{ids["dead"], ids["retrying"]}},
		{"?status=failed", []int64{ids["dead"], ids["retrying"]}}, // another spelling of retrying,dead
		{"?status=pending,retrying", []int64{ids["retrying"], ids["untried"]}},
		{"?status=pending,retrying,dead", []int64{ids["dead"], ids["retrying"], ids["untried"]}},
		{"?status=retrying,dead&limit=1", []int64{ids["dead"]}},
		{"?status=retrying,dead&limit=1&before_id=" + itoa(ids["dead"]), []int64{ids["retrying"]}},
	} {
		if got := idsOf(fetch(tc.query)); mustJSON(t, got) != mustJSON(t, tc.want) {
			t.Errorf("%s: ids %v, want %v", tc.query, got, tc.want)
		}
	}
	// One vocabulary: a filter of one state lists exactly the rows that carry it as status.
	for state, row := range map[string]string{"pending": "untried", "retrying": "retrying", "dead": "dead"} {
		l := fetch("?status=" + state)
		if got := idsOf(l); mustJSON(t, got) != mustJSON(t, []int64{ids[row]}) {
			t.Errorf("?status=%s: ids %v, want [%d]", state, got, ids[row])
			continue
		}
		if l.Postbacks[0].Status != state {
			t.Errorf("?status=%s lists a row whose status is %q", state, l.Postbacks[0].Status)
		}
	}
	l := fetch("?status=retrying,dead")
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
		{"?status=retrying,", "status"},
		{"?status=retrying;dead", "status"},
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

// postbackPartner registers a publisher whose postback URL is postbackURL.
func postbackPartner(t *testing.T, s *apptest.Server, postbackURL string) *partner {
	t.Helper()
	ctx := context.Background()
	pub, tok, err := s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Game Co", CurrencyName: "Gems",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.test/back", PostbackURL: postbackURL, Environment: s.Env})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	return &partner{s: s, ID: pub.ID, Token: tok, Secret: pub.APISecret}
}

func TestPostbackTest(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) { c.Postbacks.Timeout = 500 * time.Millisecond }})
	var mu sync.Mutex
	var got []*http.Request
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "ok")
		case "/fail":
			w.WriteHeader(500)
			fmt.Fprint(w, "boom")
		case "/slow":
			time.Sleep(2 * time.Second)
		case "/same":
			http.Redirect(w, r, "/ok?"+r.URL.RawQuery, http.StatusFound)
		case "/internal":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	}))
	defer recv.Close()
	type result struct {
		URL       string   `json:"url"`
		Delivered bool     `json:"delivered"`
		Status    int      `json:"status"`
		Body      string   `json:"body"`
		Redirects []string `json:"redirects"`
		Error     string   `json:"error"`
	}
	for _, tc := range []struct {
		path, body string
		want       result
		hits       []string
	}{
		{"/ok", `{"user_identifier":"u-7"}`, result{Delivered: true, Status: 200, Body: "ok", Redirects: []string{}}, []string{"/ok"}},
		{"/fail", ``, result{Status: 500, Body: "boom", Redirects: []string{}}, []string{"/fail"}},
		{"/same", ``, result{Delivered: true, Status: 200, Body: "ok", Redirects: []string{"<same>"}}, []string{"/same", "/ok"}},
		{"/internal", ``, result{Status: 302, Redirects: []string{"http://169.254.169.254/latest/meta-data/"},
			Error: "redirect to a non-public address refused"}, []string{"/internal"}},
		{"/slow", ``, result{Redirects: []string{}, Error: "timeout"}, []string{"/slow"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			p := postbackPartner(t, s, recv.URL+tc.path+"?src=sb")
			var body any
			if tc.body != "" {
				body = json.RawMessage(tc.body)
			}
			var r result
			p.do(t, "POST", "/supply_api/v4/postbacks/test", nil, body).Expect(t, 200).Decode(t, &r)
			u, err := url.Parse(r.URL)
			if err != nil || !strings.HasPrefix(r.URL, recv.URL+tc.path+"?src=sb&tid=test-") || !payout.VerifySech(u.RawQuery, p.Secret) {
				t.Fatalf("url %q not a signed test postback", r.URL)
			}
			if q := u.Query(); q.Get("status") != "test" || q.Get("reward") != "0" || q.Get("payout_usd") != "0.0000" {
				t.Fatalf("test postback fields %v", q)
			}
			if tc.body != "" && u.Query().Get("user_identifier") != "u-7" {
				t.Fatalf("user_identifier %v", u.Query())
			}
			if len(tc.want.Redirects) == 1 && tc.want.Redirects[0] == "<same>" {
				tc.want.Redirects = []string{"/ok?" + u.RawQuery}
			}
			r.URL = ""
			if !strings.Contains(r.Error, tc.want.Error) || (tc.want.Error == "") != (r.Error == "") {
				t.Fatalf("error %q, want %q", r.Error, tc.want.Error)
			}
			r.Error = tc.want.Error
			if r.Status == http.StatusFound {
				r.Body = "" // http.Redirect's own page
			}
			if mustJSON(t, r) != mustJSON(t, tc.want) {
				t.Fatalf("result %+v, want %+v", r, tc.want)
			}
			if tc.path == "/slow" {
				time.Sleep(2 * time.Second) // let the receiver record it
			}
			mu.Lock()
			defer mu.Unlock()
			var paths []string
			for _, r := range got {
				if !payout.VerifySech(r.URL.RawQuery, p.Secret) {
					t.Fatalf("received %s unsigned", r.URL)
				}
				paths = append(paths, r.URL.Path)
			}
			if mustJSON(t, paths) != mustJSON(t, tc.hits) {
				t.Fatalf("receiver saw %v, want %v", paths, tc.hits)
			}
		})
	}
	// Nothing is stored.
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM postback_outbox WHERE tid LIKE 'test-%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("test postbacks stored: %d %v", n, err)
	}
	// Without a postback URL, or with a bad body.
	p := newPartner(t, s)
	expectError(t, p.do(t, "POST", "/supply_api/v4/postbacks/test", nil, nil), 409, "postback URL")
	q := postbackPartner(t, s, recv.URL+"/ok")
	expectError(t, q.do(t, "POST", "/supply_api/v4/postbacks/test", nil, json.RawMessage(`{"user_identifier":7}`)), 422, "user_identifier")
	expectError(t, q.do(t, "POST", "/supply_api/v4/postbacks/test", nil, json.RawMessage(`{"user_identifier":"`+strings.Repeat("x", 256)+`"}`)), 400, "user_identifier")
}
