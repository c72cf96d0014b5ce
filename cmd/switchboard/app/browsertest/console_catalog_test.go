package browsertest

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestConsoleCatalogStatements: the quota form (its page and its live estimate) and the
// campaign workspace read the qualification catalog, answers included, in a fixed number of
// statements, not one more per question. Each page is rendered a few times and the fewest
// statements counted (the app's background work only adds to a render's count). The bounds
// are the session's and campaign's reads plus three for the catalog; one read per question
// costs 55 statements on the quota form (16 select questions) and 2 more per custom screener
// question on the workspace.
func TestConsoleCatalogStatements(t *testing.T) {
	var link *pgtest.Link
	w := newWorld(t, func(cfg *app.Config) {
		var u string
		link, u = pgtest.NewLink(t, cfg.DatabaseURL)
		cfg.DatabaseURL = u
	})
	id, _ := w.campaign("Catalog reads")
	w.screener(id)
	selects := w.count(`SELECT count(*) FROM qualifications WHERE country_language_id = 1 AND answer_type IN (0, 1)
		AND (buyer_id IS NULL OR buyer_id = $1)`, w.buyer.ID)
	c := w.console()
	c.signIn(w.buyer.Email, w.buyer.Token)
	csrf := c.csrf()
	quotaPath := fmt.Sprintf("/console/campaigns/%d/quotas/new", id)
	estimate := url.Values{"csrf": {csrf}, "do": {"feasibility"}, "num_respondents": {"60"}, "q43": {"2"}}
	for _, tc := range []struct {
		name, method, path string
		form               url.Values
		max                int64
	}{
		{"quota form", "GET", quotaPath, nil, 9},
		{"live estimate", "POST", quotaPath, estimate, 12},
		{"workspace", "GET", fmt.Sprintf("/console/campaigns/%d/edit", id), nil, 10},
	} {
		fewest, took := int64(1<<62), time.Duration(1<<62)
		for range 5 {
			before, start := link.Statements(), time.Now()
			c.do(tc.method, tc.path, tc.form, nil).Expect(t, http.StatusOK)
			took = min(took, time.Since(start))
			fewest = min(fewest, link.Statements()-before)
		}
		t.Logf("%s: %d statements, %v (%d select questions in the catalog)", tc.name, fewest, took, selects)
		if fewest > tc.max {
			t.Errorf("%s: %d statements, want at most %d whatever the catalog's size (%d select questions)",
				tc.name, fewest, tc.max, selects)
		}
	}
}
