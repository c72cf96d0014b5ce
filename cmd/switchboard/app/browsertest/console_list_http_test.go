package browsertest

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// signedInConsole is a console client signed in as the world's buyer.
func (w *world) signedInConsole() *consoleClient {
	w.t.Helper()
	c := w.console()
	expectSeeOther(w.t, c.signIn(w.buyer.Email, w.buyer.Token), "/console/campaigns")
	return c
}

// TestConsoleCampaignListHTTP: every bad query parameter of the campaign list (and of its
// CSV export) is a 422 whose message names the field, linked from the error summary to the
// field, with nothing listed; the CSV export lists what the same filters and sort list,
// every page of it.
func TestConsoleCampaignListHTTP(t *testing.T) {
	w := newWorld(t)
	alpha, _ := w.campaign("Alpha streaming")
	w.campaign("Beta commuters")
	alphaTwo, _ := w.campaign("alpha two")
	c := w.signedInConsole()

	for _, tc := range []struct{ query, field, message string }{
		{"status=9", "status", "Status must be one of the statuses listed."},
		{"status=active", "status", "Status must be one of the statuses listed."},
		{"country_language_id=999", "country_language_id", "Country and language must be one of those listed."},
		{"created_from=2026-13-01", "created_from", "Created from must be a date, YYYY-MM-DD."},
		{"created_to=yesterday", "created_to", "Created to must be a date, YYYY-MM-DD."},
		{"created_from=2026-03-05&created_to=2026-03-01", "created_to", "Created to must be on or after created from."},
		{"sort=bogus", "sort", "Sort must be one of the columns: id, name, status, country, cpi, created, start, end, fill, completes, spend."},
		{"dir=up", "dir", "Direction must be asc or desc."},
		{"page=0", "page", "Page must be a whole number from 1."},
		{"per_page=7", "per_page", "Per page must be 25, 50, 100 or 200."},
		{"q=%ff", "q", "Search must be valid UTF-8 text without NUL characters."},
		{"q=" + strings.Repeat("x", 256), "q", "Search must be at most 255 characters."},
	} {
		r := c.do("GET", "/console/campaigns?"+tc.query, nil, nil)
		expectConsolePage(t, r, http.StatusUnprocessableEntity, `<a href="#`+tc.field+`">`+tc.message+`</a>`,
			`id="`+tc.field+`"`, "Nothing is listed until the filters above are fixed.")
		if strings.Contains(string(r.Body), `id="campaign-list"`) {
			t.Fatalf("%s: a list shown with a bad parameter", tc.query)
		}
		csvr := c.do("GET", "/console/campaigns.csv?"+tc.query, nil, nil)
		expectConsolePage(t, csvr, http.StatusUnprocessableEntity, "Not exported", tc.message)
	}

	r := c.do("GET", "/console/campaigns?q=ALPHA&sort=name&dir=desc", nil, nil)
	expectConsolePage(t, r, http.StatusOK, `id="total">2<`, `aria-sort="descending"`,
		`href="/console/campaigns.csv?dir=desc&amp;q=ALPHA&amp;sort=name"`)
	body := string(r.Body)
	if i, j := strings.Index(body, fmt.Sprintf(`id="campaign-%d"`, alphaTwo)), strings.Index(body, fmt.Sprintf(`id="campaign-%d"`, alpha)); i < 0 || j < 0 || i > j {
		t.Fatalf("alpha two (at %d) not before Alpha streaming (at %d) sorted by name descending", i, j)
	}

	export := c.do("GET", "/console/campaigns.csv?dir=desc&q=ALPHA&sort=name&page=5", nil, nil).Expect(t, http.StatusOK)
	if cd := export.Header.Get("Content-Disposition"); cd != `attachment; filename="campaigns.csv"` {
		t.Fatalf("Content-Disposition %q", cd)
	}
	rows, err := csv.NewReader(strings.NewReader(string(export.Body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1][1] != "alpha two" || rows[2][1] != "Alpha streaming" || rows[0][12] != "spend_usd" ||
		rows[1][2] != "active" || rows[1][3] != "en-US" || rows[1][9] != "100" || rows[1][12] != "0.0000" || rows[1][13] != "cpi_x_completes" {
		t.Fatalf("export %q", rows)
	}

	// A name a spreadsheet would run as a formula is exported as text.
	w.campaign(`=HYPERLINK("https://evil.example","formula")`)
	export = c.do("GET", "/console/campaigns.csv?q=formula", nil, nil).Expect(t, http.StatusOK)
	if rows, err = csv.NewReader(strings.NewReader(string(export.Body))).ReadAll(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1][1] != `'=HYPERLINK("https://evil.example","formula")` {
		t.Fatalf("export of a formula-like name %q", rows)
	}
}

// TestConsoleCampaignTargetingHTTP: a campaign's page says its quotas' conditions in words
// (ages as a range, answers by their text, ZIP codes), its excluded suppliers by name and
// its dates.
func TestConsoleCampaignTargetingHTTP(t *testing.T) {
	w := newWorld(t)
	id, _ := w.campaign("Young women in Manhattan")
	w.buyer.Do(t, "POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", id), map[string]any{
		"name": "Women 18-34", "num_respondents": 50, "campaign_qualifications": []any{
			map[string]any{"question_id": 42, "pre_codes": []int{18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 50}},
			map[string]any{"question_id": 43, "pre_codes": []int{2}},
			map[string]any{"question_id": 45, "pre_codes": []string{"10001", "10002"}},
		}}).Expect(t, 201)
	w.buyer.Do(t, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", id), map[string]any{"excluded_supplier_ids": []int64{w.pub.ID}}).Expect(t, 200)
	c := w.signedInConsole()
	r := c.do("GET", fmt.Sprintf("/console/campaigns/%d", id), nil, nil)
	expectConsolePage(t, r, http.StatusOK,
		`<dt title="What is your gender?">Gender</dt><dd>Male or Female</dd>`, // the world's first quota
		`<dt title="What is your age?">Age</dt><dd>18–34, 50</dd>`,
		`<dt title="What is your gender?">Gender</dt><dd>Female</dd>`,
		`<dt title="What is your ZIP code?">ZIP code</dt><dd>10001, 10002</dd>`,
		`<li>Puzzle Quest <span class="opt">#`+fmt.Sprint(w.pub.ID)+`</span></li>`,
		"<dt>In field since</dt>", "<dt>Planned end</dt>", "No custom screener question.")
}
