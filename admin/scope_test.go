package admin_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/admin"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

// readOnlyPosts are the POST routes that change nothing, which a read token may call: the
// test's own list, so that a route the server counts as a read by mistake fails here.
var readOnlyPosts = map[string]bool{
	"POST /api/v1/campaigns/realtime_feasibility":     true,
	"POST /api/v1/campaigns/{id}/export_demographics": true,
}

var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

// TestReadScope walks every route of the buyer interface with a read token: each one that
// writes (every method but GET, except readOnlyPosts) answers 403 naming the scope and
// changes nothing; each read is not refused for the scope. A write token still writes.
func TestReadScope(t *testing.T) {
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)
	b.Do(t, "POST", "/api/v1/campaigns", map[string]any{"name": "Tea", "incidence": 50, "length_of_interview": 10,
		"country_language_id": 1, "supplier_link": "https://survey.example/s?tid={ID}"}).Expect(t, 201)
	_, token, err := s.DB.Accounts.IssueScopedBuyerToken(context.Background(), b.Email, s.Env, persistence.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	reader := *b
	reader.Token = token
	before := string(b.Do(t, "GET", "/api/v1/campaigns/1", nil).Expect(t, 200).Body)

	writes := 0
	for _, r := range admin.New(admin.Deps{}).Routes() {
		path := pathParam.ReplaceAllString(r.Pattern, "1")
		var body any
		if r.Method != "GET" {
			body = map[string]any{}
		}
		resp := reader.Do(t, r.Method, path, body)
		key := r.Method + " " + r.Pattern
		if r.Method != "GET" && !readOnlyPosts[key] {
			writes++
			if resp.Status != 403 || !strings.Contains(resp.Message(t), "this token's scope is read: it cannot") {
				t.Errorf("%s with a read token: %d %s, want 403 naming the scope", key, resp.Status, resp.Body)
			}
			if !r.Writes() {
				t.Errorf("%s: Route.Writes is false for a route that writes", key)
			}
		} else if resp.Status == 403 {
			t.Errorf("%s with a read token: 403 %s, want it read", key, resp.Body)
		}
	}
	if writes < 15 {
		t.Fatalf("only %d write routes walked", writes)
	}
	if after := string(b.Do(t, "GET", "/api/v1/campaigns/1", nil).Expect(t, 200).Body); after != before {
		t.Errorf("the read token's writes changed the campaign:\n%s\n%s", before, after)
	}
	b.Do(t, "PUT", "/api/v1/campaigns/1", map[string]any{"name": "Tea 2"}).Expect(t, 200)
}
