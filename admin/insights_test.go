package admin_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/admin"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

// Sessions are stored with SQL here, as the routing engineer's entry and callback flow would
// store them (a participant with a profile, the buyer's respondent id, a session with its
// outcome, and the custom screener answers of the pre-screener).

// csvRoutes lists the routes that answer CSV ("METHOD pattern").
func csvRoutes() map[string]bool {
	out := map[string]bool{}
	for _, r := range admin.New(admin.Deps{}).Routes() {
		if r.CSV {
			out[r.Method+" "+r.Pattern] = true
		}
	}
	return out
}

type campaignRef struct {
	ID        int64 `json:"id"`
	ProjectID int64 `json:"project_id"`
}

// newCampaign creates a campaign over HTTP and returns its id and project.
func newCampaign(t testing.TB, b *apptest.Buyer, overrides map[string]any) campaignRef {
	t.Helper()
	body := campaignBody()
	for k, v := range overrides {
		body[k] = v
	}
	var c campaignRef
	b.Do(t, "POST", "/api/v1/campaigns", body).Expect(t, 201).Decode(t, &c)
	return c
}

// publish activates a campaign once (a global quota, then status 2) and pauses it again: its
// project is no longer a draft (docs/rules.md §4) and the campaign still reads as paused.
func publish(t testing.TB, b *apptest.Buyer, c campaignRef) campaignRef {
	t.Helper()
	createQuota(t, b, c.ID, map[string]any{"num_respondents": 1, "is_global": true, "campaign_qualifications": []any{}})
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 2}).Expect(t, 200)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", c.ID), map[string]any{"status": 5}).Expect(t, 200)
	return c
}

// stored is one session to store.
type stored struct {
	tid, respondent string
	profile         map[string]any // the participant's answers, stored form {"43": [2]}
	outcome         string         // "" no outcome yet
	rejected        bool
	released        bool
	test            bool
	entered         time.Time
	screener        map[int][]int // custom question id → pre_codes
}

var userSeq atomic.Int64

// storeSession stores one session of campaign for buyer b and returns its session id.
func storeSession(t testing.TB, s *apptest.Server, b *apptest.Buyer, campaign int64, x stored) int64 {
	t.Helper()
	ctx := context.Background()
	if x.entered.IsZero() {
		x.entered = time.Now()
	}
	var outcome any
	if x.outcome != "" {
		outcome = x.outcome
	}
	var sid int64
	if x.test {
		err := s.DB.Pool.QueryRow(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, is_test, entered_at, outcome, outcome_at)
			VALUES ($1, $2, $3, true, $4, $5::text, CASE WHEN $5::text IS NULL THEN NULL ELSE now() END) RETURNING id`,
			x.tid, campaign, b.ID, x.entered, outcome).Scan(&sid)
		if err != nil {
			t.Fatal(err)
		}
		return sid
	}
	pub := publisher(t, s)
	prof, _ := json.Marshal(x.profile)
	if x.profile == nil {
		prof = []byte("{}")
	}
	var participant int64
	err := s.DB.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
		VALUES ($1, $2, 1, $3) RETURNING id`, pub, fmt.Sprintf("user-%d", userSeq.Add(1)), prof).Scan(&participant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO respondents (buyer_id, participant_id, respondent_id) VALUES ($1, $2, $3)`,
		b.ID, participant, x.respondent); err != nil {
		t.Fatal(err)
	}
	err = s.DB.Pool.QueryRow(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id, respondent_id,
			entered_at, outcome, outcome_at, rejected, released_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::text, CASE WHEN $8::text IS NULL THEN NULL ELSE $7::timestamptz + interval '10 minutes' END, $9,
			CASE WHEN $10 THEN now() END) RETURNING id`,
		x.tid, campaign, b.ID, pub, participant, x.respondent, x.entered, outcome, x.rejected, x.released).Scan(&sid)
	if err != nil {
		t.Fatal(err)
	}
	for q, codes := range x.screener {
		if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO screener_answers (session_id, question_id, pre_codes) VALUES ($1, $2, $3)`,
			sid, q, codes); err != nil {
			t.Fatal(err)
		}
	}
	return sid
}

// publisher returns the id of a publisher of the server, creating one the first time.
func publisher(t testing.TB, s *apptest.Server) int64 {
	t.Helper()
	ctx := context.Background()
	var pub int64
	if err := s.DB.Pool.QueryRow(ctx, `SELECT id FROM publishers ORDER BY id LIMIT 1`).Scan(&pub); err == nil {
		return pub
	}
	p, _, err := s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Panel", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://panel.example/back", Environment: s.Env})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// getCSV performs an authenticated GET (or POST with body) that answers CSV and parses it.
func getCSV(t testing.TB, b *apptest.Buyer, method, p string, body any) ([][]string, apptest.Response) {
	t.Helper()
	req := b.Request(t, method, p, body)
	req.Header.Set("Accept", "text/csv")
	resp := b.Server().Send(t, req).Expect(t, 200)
	if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("%s %s: Content-Type %q", method, p, ct)
	}
	r := csv.NewReader(bytes.NewReader(resp.Body))
	r.FieldsPerRecord = 0 // every record as long as the header
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s %s: CSV does not parse: %v\n%s", method, p, err, resp.Body)
	}
	return recs, resp
}

// orderedKeys returns the keys of the JSON object at data.attributes.columns, in order.
func orderedKeys(t testing.TB, body []byte) ([]string, map[string]string) {
	t.Helper()
	var doc struct {
		Data struct {
			Attributes struct {
				Columns json.RawMessage `json:"columns"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Data.Attributes.Columns))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("columns is not an object: %s", doc.Data.Attributes.Columns)
	}
	var keys []string
	titles := map[string]string{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		titles[k.(string)] = v
	}
	return keys, titles
}

type projectsPage struct {
	Data struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Attributes struct {
			Page     int `json:"page"`
			Pages    int `json:"pages"`
			Projects struct {
				Data []projectDoc `json:"data"`
			} `json:"projects"`
		} `json:"attributes"`
	} `json:"data"`
}

type projectDoc struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		ID          int64  `json:"id"`
		Name        string `json:"name"`
		ProjectType string `json:"project_type"`
		Campaigns   []struct {
			ID         string `json:"id"`
			Type       string `json:"type"`
			Attributes struct {
				ID         int64   `json:"id"`
				Status     string  `json:"status"`
				CompleteAt *string `json:"complete_at"`
				WaveNumber int     `json:"wave_number"`
			} `json:"attributes"`
			Links struct {
				ResultsURL *string `json:"results_url"`
				ColumnsURL *string `json:"columns_url"`
			} `json:"links"`
		} `json:"campaigns"`
	} `json:"attributes"`
}

func listProjects(t testing.TB, b *apptest.Buyer, query string) projectsPage {
	t.Helper()
	var p projectsPage
	b.Do(t, "GET", "/insights_api/projects"+query, nil).Expect(t, 200).Decode(t, &p)
	return p
}

func TestInsightsProjectList(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b, other := s.NewBuyer(t), s.NewBuyer(t)

	// Empty: one empty page.
	p := listProjects(t, b, "")
	if p.Data.ID != "projects_list_"+b.CustomerID || p.Data.Type != "projects_list" || p.Data.Attributes.Page != 1 ||
		p.Data.Attributes.Pages != 1 || p.Data.Attributes.Projects.Data == nil || len(p.Data.Attributes.Projects.Data) != 0 {
		t.Fatalf("empty list: %+v", p)
	}

	var refs []campaignRef
	for i := 0; i < 30; i++ {
		refs = append(refs, publish(t, b, newCampaign(t, b, map[string]any{"name": fmt.Sprintf("Study %02d", i+1)})))
	}
	p = listProjects(t, b, "")
	if got := len(p.Data.Attributes.Projects.Data); got != 30 || p.Data.Attributes.Pages != 1 {
		t.Fatalf("30 projects: %d on the page, %d pages", got, p.Data.Attributes.Pages)
	}
	first := p.Data.Attributes.Projects.Data[0]
	if first.ID != fmt.Sprint(refs[0].ProjectID) || first.Type != "project" || first.Attributes.ID != refs[0].ProjectID ||
		first.Attributes.Name != "Study 01" || first.Attributes.ProjectType != "one_time" || len(first.Attributes.Campaigns) != 1 ||
		first.Attributes.Campaigns[0].ID != fmt.Sprint(refs[0].ID) || first.Attributes.Campaigns[0].Attributes.WaveNumber != 1 {
		t.Errorf("first project: %+v", first)
	}
	if p := listProjects(t, b, "?page=2"); len(p.Data.Attributes.Projects.Data) != 0 || p.Data.Attributes.Page != 2 || p.Data.Attributes.Pages != 1 {
		t.Errorf("page 2 of 30: %+v", p.Data.Attributes)
	}

	// A draft (a project none of whose campaigns was ever activated) is hidden everywhere,
	// paging included: 30 projects and a draft are one page.
	draft := newCampaign(t, b, map[string]any{"name": "Draft"})
	if p := listProjects(t, b, ""); len(p.Data.Attributes.Projects.Data) != 30 || p.Data.Attributes.Pages != 1 {
		t.Errorf("draft listed: %d projects, %d pages", len(p.Data.Attributes.Projects.Data), p.Data.Attributes.Pages)
	}
	b.Do(t, "GET", path("/insights_api/projects/%d", draft.ProjectID), nil).Expect(t, 404)
	b.Do(t, "GET", path("/insights_api/projects/%d/campaigns/%d/columns", draft.ProjectID, draft.ID), nil).Expect(t, 404)

	refs = append(refs, publish(t, b, newCampaign(t, b, map[string]any{"name": "Study 31"})))
	p = listProjects(t, b, "?page=1")
	if len(p.Data.Attributes.Projects.Data) != 30 || p.Data.Attributes.Pages != 2 {
		t.Fatalf("31 projects, page 1: %d, %d pages", len(p.Data.Attributes.Projects.Data), p.Data.Attributes.Pages)
	}
	p = listProjects(t, b, "?page=2")
	if len(p.Data.Attributes.Projects.Data) != 1 || p.Data.Attributes.Projects.Data[0].Attributes.Name != "Study 31" ||
		p.Data.Attributes.Page != 2 || p.Data.Attributes.Pages != 2 {
		t.Fatalf("31 projects, page 2: %+v", p.Data.Attributes)
	}

	// project_type: the first project becomes recurring with a second wave.
	newCampaign(t, b, map[string]any{"name": "Study 01 wave 2", "project_id": refs[0].ProjectID})
	p = listProjects(t, b, "?project_type=recurring")
	if len(p.Data.Attributes.Projects.Data) != 1 || p.Data.Attributes.Projects.Data[0].Attributes.ID != refs[0].ProjectID ||
		p.Data.Attributes.Projects.Data[0].Attributes.ProjectType != "recurring" || p.Data.Attributes.Pages != 1 {
		t.Errorf("recurring: %+v", p.Data.Attributes)
	}
	p = listProjects(t, b, "?project_type=one_time&page=1")
	if len(p.Data.Attributes.Projects.Data) != 30 || p.Data.Attributes.Pages != 1 {
		t.Errorf("one_time: %d, %d pages", len(p.Data.Attributes.Projects.Data), p.Data.Attributes.Pages)
	}
	for _, d := range p.Data.Attributes.Projects.Data {
		if d.Attributes.ProjectType != "one_time" {
			t.Errorf("one_time filter lists %+v", d)
		}
	}

	// Far past the last page, and an empty page parameter (the default).
	if p := listProjects(t, b, "?page=9223372036854775807"); len(p.Data.Attributes.Projects.Data) != 0 || p.Data.Attributes.Pages != 2 {
		t.Errorf("huge page: %+v", p.Data.Attributes)
	}
	if p := listProjects(t, b, "?page="); len(p.Data.Attributes.Projects.Data) != 30 || p.Data.Attributes.Page != 1 {
		t.Errorf("empty page parameter: %+v", p.Data.Attributes)
	}

	// Malformed queries.
	for _, q := range []string{"?page=0", "?page=-1", "?page=abc", "?page=1.5", "?page=99999999999999999999",
		"?project_type=weekly", "?project_type=ONE_TIME"} {
		r := b.Do(t, "GET", "/insights_api/projects"+q, nil)
		if r.Status != 400 || r.Message(t) == "" {
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
		}
	}

	// Another organization sees its own, empty, list and none of these projects.
	op := listProjects(t, other, "")
	if op.Data.ID != "projects_list_"+other.CustomerID || len(op.Data.Attributes.Projects.Data) != 0 {
		t.Errorf("other organization: %+v", op)
	}
	other.Do(t, "GET", path("/insights_api/projects/%d", refs[0].ProjectID), nil).Expect(t, 404)

	// The interface shares the buyer conventions.
	s.Send(t, s.NewRequest(t, "GET", "/insights_api/projects", nil)).Expect(t, 401)
	req := b.Request(t, "GET", "/insights_api/projects", nil)
	req.Header.Set("Accept", "text/csv")
	s.Send(t, req).Expect(t, 406)
	b.Do(t, "GET", "/insights_api/projects/", nil).Expect(t, 200)
	b.Do(t, "POST", "/insights_api/projects", nil).Expect(t, 405)
}

// TestInsightsDrafts follows a project from draft to published (docs/rules.md §4): a draft
// until one of its campaigns is first activated, absent meanwhile from the list, its filters
// and paging and from every project read; published for good by that first activation.
func TestInsightsDrafts(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)

	live := publish(t, b, newCampaign(t, b, map[string]any{"name": "Live"}))
	draft := newCampaign(t, b, map[string]any{"name": "Draft"})
	wave2 := newCampaign(t, b, map[string]any{"name": "Draft wave 2", "project_id": draft.ProjectID})
	// Complete without ever being active: still a draft.
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", draft.ID), map[string]any{"status": 3}).Expect(t, 200)

	listed := func(query string) (ids []int64, pages int) {
		t.Helper()
		p := listProjects(t, b, query)
		for _, d := range p.Data.Attributes.Projects.Data {
			ids = append(ids, d.Attributes.ID)
		}
		return ids, p.Data.Attributes.Pages
	}
	reads := []string{
		path("/insights_api/projects/%d", draft.ProjectID),
		path("/insights_api/projects/%d/campaigns/%d/columns", draft.ProjectID, draft.ID),
		path("/insights_api/projects/%d/campaigns/%d", draft.ProjectID, wave2.ID),
		path("/insights_api/%d/campaigns/%d/columns", draft.ProjectID, wave2.ID),
	}
	for _, c := range []struct {
		query string
		want  []int64
	}{{"", []int64{live.ProjectID}}, {"?project_type=one_time", []int64{live.ProjectID}}, {"?project_type=recurring", nil}} {
		if ids, pages := listed(c.query); !reflect.DeepEqual(ids, c.want) || pages != 1 {
			t.Errorf("draft: list%s = %v (%d pages), want %v", c.query, ids, pages, c.want)
		}
	}
	for _, p := range reads {
		b.Do(t, "GET", p, nil).Expect(t, 404)
	}

	// The first activation of any of its campaigns publishes it; pausing does not hide it again.
	createQuota(t, b, wave2.ID, nil)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", wave2.ID), map[string]any{"status": 2}).Expect(t, 200)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", wave2.ID), map[string]any{"status": 5}).Expect(t, 200)
	for _, c := range []struct {
		query string
		want  []int64
	}{{"", []int64{live.ProjectID, draft.ProjectID}}, {"?project_type=one_time", []int64{live.ProjectID}},
		{"?project_type=recurring", []int64{draft.ProjectID}}} {
		if ids, pages := listed(c.query); !reflect.DeepEqual(ids, c.want) || pages != 1 {
			t.Errorf("published: list%s = %v (%d pages), want %v", c.query, ids, pages, c.want)
		}
	}
	for _, p := range reads {
		b.Do(t, "GET", p, nil).Expect(t, 200)
	}
}

func TestInsightsProjectWaves(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b, other := s.NewBuyer(t), s.NewBuyer(t)
	ctx := context.Background()

	w1 := newCampaign(t, b, map[string]any{"name": "Tracker"})
	w2 := newCampaign(t, b, map[string]any{"name": "Tracker wave 2", "project_id": w1.ProjectID})
	w3 := newCampaign(t, b, map[string]any{"name": "Tracker wave 3", "project_id": w1.ProjectID})
	createQuota(t, b, w2.ID, nil)
	b.Do(t, "PUT", path("/api/v1/campaigns/%d", w2.ID), map[string]any{"status": 2}).Expect(t, 200)
	done := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	if _, err := s.DB.Pool.Exec(ctx, `UPDATE campaigns SET status = 3, completed_at = $2 WHERE id = $1`, w1.ID, done); err != nil {
		t.Fatal(err)
	}

	get := func(b *apptest.Buyer, p string) projectDoc {
		t.Helper()
		var d struct {
			Data projectDoc `json:"data"`
		}
		b.Do(t, "GET", p, nil).Expect(t, 200).Decode(t, &d)
		return d.Data
	}
	projectPath := path("/insights_api/projects/%d", w1.ProjectID)
	d := get(b, projectPath)
	if d.ID != fmt.Sprint(w1.ProjectID) || d.Type != "project" || d.Attributes.ProjectType != "recurring" ||
		d.Attributes.Name != "Tracker" || len(d.Attributes.Campaigns) != 3 {
		t.Fatalf("project: %+v", d)
	}
	want := []struct {
		id     int64
		status string
		done   bool
	}{{w1.ID, "complete", true}, {w2.ID, "active", false}, {w3.ID, "paused", false}}
	for i, c := range d.Attributes.Campaigns {
		if c.ID != fmt.Sprint(want[i].id) || c.Type != "campaign" || c.Attributes.ID != want[i].id ||
			c.Attributes.WaveNumber != i+1 || c.Attributes.Status != want[i].status {
			t.Errorf("wave %d: %+v", i+1, c)
		}
		if want[i].done != (c.Attributes.CompleteAt != nil) {
			t.Errorf("wave %d complete_at: %v", i+1, c.Attributes.CompleteAt)
		}
		if c.Links.ResultsURL != nil || c.Links.ColumnsURL != nil {
			t.Errorf("wave %d has links before any response: %+v", i+1, c.Links)
		}
	}
	if c := d.Attributes.Campaigns[0]; c.Attributes.CompleteAt == nil || *c.Attributes.CompleteAt != "2026-03-01T12:30:00Z" {
		t.Errorf("complete_at: %v", c.Attributes.CompleteAt)
	}
	// The raw JSON carries explicit nulls.
	raw := string(b.Do(t, "GET", projectPath, nil).Body)
	for _, k := range []string{`"complete_at":null`, `"results_url":null`, `"columns_url":null`} {
		if !strings.Contains(raw, k) {
			t.Errorf("project JSON lacks %s: %s", k, raw)
		}
	}

	// Sessions that did not reach complete are no responses; a complete (even rejected) is.
	storeSession(t, s, b, w2.ID, stored{tid: "w2-oq", respondent: "RW2OQ", outcome: "over_quota"})
	storeSession(t, s, b, w2.ID, stored{tid: "w2-run", respondent: "RW2RUN"})
	storeSession(t, s, b, w3.ID, stored{tid: "w3-test", outcome: "complete", test: true})
	storeSession(t, s, b, w1.ID, stored{tid: "w1-c", respondent: "RW1C", outcome: "complete", rejected: true})
	d = get(b, projectPath)
	results := s.PublicURL + path("/insights_api/projects/%d/campaigns/%d", w1.ProjectID, w1.ID)
	if l := d.Attributes.Campaigns[0].Links; l.ResultsURL == nil || *l.ResultsURL != results || l.ColumnsURL == nil || *l.ColumnsURL != results+"/columns" {
		t.Errorf("wave 1 links: %+v", l)
	}
	for _, c := range d.Attributes.Campaigns[1:] {
		if c.Links.ResultsURL != nil || c.Links.ColumnsURL != nil {
			t.Errorf("campaign %s has links without a complete: %+v", c.ID, c.Links)
		}
	}
	// The links work as handed out.
	rel := strings.TrimPrefix(results, s.PublicURL)
	recs, _ := getCSV(t, b, "GET", rel, nil)
	if len(recs) != 2 || recs[1][0] != "w1-c" || recs[1][3] != "Rejected" {
		t.Errorf("results by link: %v", recs)
	}
	b.Do(t, "GET", rel+"/columns", nil).Expect(t, 200)

	// Status strings of every integer status.
	for status, wantStr := range map[int]string{2: "active", 3: "complete", 4: "archived", 5: "paused", 6: "complete", 7: "paused"} {
		if _, err := s.DB.Pool.Exec(ctx, `UPDATE campaigns SET status = $2 WHERE id = $1`, w3.ID, status); err != nil {
			t.Fatal(err)
		}
		if got := get(b, projectPath).Attributes.Campaigns[2].Attributes.Status; got != wantStr {
			t.Errorf("status %d: %q, want %q", status, got, wantStr)
		}
	}

	// Another organization, a campaign under the wrong project, unknown and malformed ids: 404.
	single := publish(t, b, newCampaign(t, b, nil))
	for _, p := range []string{
		path("/insights_api/projects/%d/campaigns/%d/columns", single.ProjectID, w1.ID),
		path("/insights_api/projects/%d/campaigns/%d", single.ProjectID, w1.ID),
		path("/insights_api/%d/campaigns/%d/columns", single.ProjectID, w1.ID),
		path("/insights_api/projects/%d", single.ProjectID+100),
		"/insights_api/projects/abc", "/insights_api/projects/0", "/insights_api/projects/1/campaigns/x/columns",
	} {
		if r := b.Do(t, "GET", p, nil); r.Status != 404 || r.Message(t) == "" {
			t.Errorf("GET %s: %d %s", p, r.Status, r.Body)
		}
	}
	for _, p := range []string{
		projectPath,
		path("/insights_api/projects/%d/campaigns/%d/columns", w1.ProjectID, w1.ID),
		path("/insights_api/projects/%d/campaigns/%d", w1.ProjectID, w1.ID),
		path("/insights_api/%d/campaigns/%d/columns", w1.ProjectID, w1.ID),
		path("/insights_api/%d/campaigns/%d", w1.ProjectID, w1.ID),
	} {
		if r := other.Do(t, "GET", p, nil); r.Status != 404 {
			t.Errorf("another organization GET %s: %d %s", p, r.Status, r.Body)
		}
	}
}

// Answer texts that CSV must quote or carry byte for byte.
var trickyTexts = []string{
	`Yes, "definitely"`,
	"two\nlines, and \"quotes\"",
	"日本語の回答",
	"🚀 rocket, 👩‍👩‍👧 family",
	`,leading comma`,
	`"`,
}

func TestInsightsColumnsAndResults(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	c := publish(t, b, newCampaign(t, b, nil))

	// A custom screener with tricky answer texts, attached to the campaign.
	var cq struct {
		QuestionID int `json:"question_id"`
	}
	b.Do(t, "POST", "/api/v1/custom_qualifications", map[string]any{"name": "FAVOURITE", "question_text": "Pick, \"any\" answer",
		"answer_type": 1, "country_language_id": 1}).Expect(t, 201).Decode(t, &cq)
	for _, text := range trickyTexts {
		b.Do(t, "POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", cq.QuestionID),
			map[string]any{"option_text": text}).Expect(t, 201)
	}
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_qualifications", c.ID),
		map[string]any{"question_id": cq.QuestionID, "pre_code_values": "1"}).Expect(t, 201)

	// Columns: base, pq_ in catalog order (AGE twice), tq_.
	colsPath := path("/insights_api/projects/%d/campaigns/%d/columns", c.ProjectID, c.ID)
	resp := b.Do(t, "GET", colsPath, nil).Expect(t, 200)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("columns Content-Type %q", ct)
	}
	var doc struct {
		Data struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"data"`
	}
	resp.Decode(t, &doc)
	if doc.Data.ID != fmt.Sprintf("columns_%d", c.ID) || doc.Data.Type != "campaign_columns" {
		t.Errorf("columns resource: %s", resp.Body)
	}
	keys, titles := orderedKeys(t, resp.Body)
	wantKeys := []string{"id", "time", "panelist_id", "status", "pq_42", "pq_42_non_bucketed", "pq_43", "pq_45", "pq_100", "pq_47",
		"pq_112", "pq_101", "pq_102", "pq_103", "pq_104", "pq_105", "pq_106", "pq_107", "pq_108", "pq_109", "pq_110", "pq_111",
		fmt.Sprintf("tq_%d", cq.QuestionID), "speeder"}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("columns order:\n got %v\nwant %v", keys, wantKeys)
	}
	if titles["pq_43"] != "What is your gender?" || titles[fmt.Sprintf("tq_%d", cq.QuestionID)] != `Pick, "any" answer` {
		t.Errorf("titles: %v", titles)
	}
	// The reference form answers the same.
	if r := b.Do(t, "GET", path("/insights_api/%d/campaigns/%d/columns", c.ProjectID, c.ID), nil).Expect(t, 200); !bytes.Equal(r.Body, resp.Body) {
		t.Errorf("reference form differs:\n%s\n%s", r.Body, resp.Body)
	}

	// Sessions: completes with every kind of answer, and sessions that must not be listed.
	t0 := time.Date(2026, 4, 2, 9, 15, 0, 0, time.UTC)
	storeSession(t, s, b, c.ID, stored{tid: "tid-1", respondent: "R1", outcome: "complete", entered: t0,
		profile: map[string]any{"42": []int{29}, "43": []int{2}, "45": []string{"94105"}, "47": []int{2},
			"110": []int{3, 1}, "111": []int{99}},
		screener: map[int][]int{cq.QuestionID: {1, 2, 3, 4, 5, 6}}})
	storeSession(t, s, b, c.ID, stored{tid: "tid-2", respondent: "R2", outcome: "complete", rejected: true, entered: t0.Add(time.Minute),
		profile: map[string]any{"42": []int{67}, "43": []int{1}, "45": []string{"a,b \"c\"\nd 日本語 🚀"}}})
	storeSession(t, s, b, c.ID, stored{tid: "tid-3", respondent: "R3", outcome: "disqualified", profile: map[string]any{"43": []int{1}}})
	storeSession(t, s, b, c.ID, stored{tid: "tid-4", respondent: "R4", profile: map[string]any{"43": []int{1}}})
	storeSession(t, s, b, c.ID, stored{tid: "tid-test", outcome: "complete", test: true})
	storeSession(t, s, b, c.ID, stored{tid: "tid-5", respondent: "R5", outcome: "complete", entered: t0.Add(2 * time.Minute),
		profile: map[string]any{"42": []int{17}}, screener: map[int][]int{cq.QuestionID: {6}}})
	storeSession(t, s, b, c.ID, stored{tid: "tid-6", respondent: "R6", outcome: "complete", entered: t0.Add(3 * time.Minute)})

	resultsPath := path("/insights_api/projects/%d/campaigns/%d", c.ProjectID, c.ID)
	recs, r := getCSV(t, b, "GET", resultsPath, nil)
	if cd := r.Header.Get("Content-Disposition"); cd != fmt.Sprintf("attachment; filename=campaign_result_%d.csv", c.ID) {
		t.Errorf("Content-Disposition %q", cd)
	}
	if !reflect.DeepEqual(recs[0], wantKeys) {
		t.Fatalf("CSV header differs from the columns order:\n got %v\nwant %v", recs[0], wantKeys)
	}
	if len(recs) != 5 {
		t.Fatalf("want 4 result rows, got %d: %q", len(recs)-1, recs)
	}
	row := func(i int) map[string]string {
		m := map[string]string{}
		for j, k := range recs[0] {
			m[k] = recs[i][j]
		}
		return m
	}
	tq := fmt.Sprintf("tq_%d", cq.QuestionID)
	r1 := row(1)
	for k, v := range map[string]string{"id": "tid-1", "time": "2026-04-02T09:15:00Z", "panelist_id": "R1", "status": "Complete",
		"pq_42": "25-34", "pq_42_non_bucketed": "29", "pq_43": "Female", "pq_45": "94105",
		"pq_47": "Yes, Mexican, Mexican American, Chicano", "pq_110": "Smartphone; Laptop computer", "pq_111": "99",
		"pq_100": "", "pq_109": "", tq: strings.Join(trickyTexts, "; ")} {
		if r1[k] != v {
			t.Errorf("row 1 %s = %q, want %q", k, r1[k], v)
		}
	}
	r2 := row(2)
	for k, v := range map[string]string{"id": "tid-2", "status": "Rejected", "pq_42": "65+", "pq_42_non_bucketed": "67",
		"pq_43": "Male", "pq_45": "a,b \"c\"\nd 日本語 🚀", tq: ""} {
		if r2[k] != v {
			t.Errorf("row 2 %s = %q, want %q", k, r2[k], v)
		}
	}
	if r5 := row(3); r5["id"] != "tid-5" || r5["pq_42"] != "Under 18" || r5[tq] != trickyTexts[5] || r5["pq_43"] != "" {
		t.Errorf("row 3: %v", r5)
	}
	if r6 := row(4); r6["id"] != "tid-6" || r6["pq_42"] != "" || r6["pq_42_non_bucketed"] != "" {
		t.Errorf("row 4: %v", r6)
	}

	// The reference form, and Accept values that admit CSV or JSON.
	ref, _ := getCSV(t, b, "GET", path("/insights_api/%d/campaigns/%d", c.ProjectID, c.ID), nil)
	if !reflect.DeepEqual(ref, recs) {
		t.Errorf("reference form differs")
	}
	for _, accept := range []string{"", "*/*", "application/json", "text/*", "text/csv;q=0.5, application/json"} {
		req := b.Request(t, "GET", resultsPath, nil)
		req.Header.Set("Accept", accept)
		if r := s.Send(t, req); r.Status != 200 || r.Header.Get("Content-Type") != admin.ContentTypeCSV {
			t.Errorf("Accept %q: %d %v", accept, r.Status, r.Header)
		}
	}
	req := b.Request(t, "GET", resultsPath, nil)
	req.Header.Set("Accept", "text/html")
	if r := s.Send(t, req); r.Status != 406 || r.Message(t) == "" {
		t.Errorf("Accept text/html: %d %s", r.Status, r.Body)
	}

	// A campaign without results: the header only.
	empty := publish(t, b, newCampaign(t, b, map[string]any{"country_language_id": 6}))
	recs, _ = getCSV(t, b, "GET", path("/insights_api/%d/campaigns/%d", empty.ProjectID, empty.ID), nil)
	keys, _ = orderedKeys(t, b.Do(t, "GET", path("/insights_api/%d/campaigns/%d/columns", empty.ProjectID, empty.ID), nil).Expect(t, 200).Body)
	if len(recs) != 1 || !reflect.DeepEqual(recs[0], keys) || keys[4] != "pq_42" {
		t.Errorf("empty results: %v vs columns %v", recs, keys)
	}
}

func TestExportDemographics(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b, other := s.NewBuyer(t), s.NewBuyer(t)
	c := newCampaign(t, b, nil)
	exportPath := path("/api/v1/campaigns/%d/export_demographics", c.ID)

	// No sessions: the header only.
	recs, resp := getCSV(t, b, "POST", exportPath, nil)
	if !reflect.DeepEqual(recs, [][]string{{"transaction_id", "respondent_id", "status", "speeder"}}) {
		t.Errorf("empty export: %q", recs)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != fmt.Sprintf("attachment; filename=campaign_%d_demographics.csv", c.ID) {
		t.Errorf("Content-Disposition %q", cd)
	}

	storeSession(t, s, b, c.ID, stored{tid: "t-1", respondent: "P1", outcome: "complete",
		profile: map[string]any{"42": []int{34}, "43": []int{2}, "45": []string{"10001"}}})
	storeSession(t, s, b, c.ID, stored{tid: "t-2", respondent: "P2", outcome: "complete", rejected: true,
		profile: map[string]any{"43": []int{1}, "47": []int{2}}})
	storeSession(t, s, b, c.ID, stored{tid: "t-3", respondent: "P3", outcome: "over_quota", profile: map[string]any{"45": []string{"x, \"y\"\n日本語 🚀"}}})
	storeSession(t, s, b, c.ID, stored{tid: "t-4", respondent: "P4", outcome: "quality_term"})
	storeSession(t, s, b, c.ID, stored{tid: "t-5", respondent: "P5", outcome: "disqualified"})
	storeSession(t, s, b, c.ID, stored{tid: "t-6", respondent: "P6"})
	storeSession(t, s, b, c.ID, stored{tid: "t-7", respondent: "P7", released: true})
	storeSession(t, s, b, c.ID, stored{tid: "t-test", outcome: "complete", test: true})
	other2 := newCampaign(t, b, nil)
	storeSession(t, s, b, other2.ID, stored{tid: "elsewhere", respondent: "PX", outcome: "complete", profile: map[string]any{"110": []int{1}}})

	recs, _ = getCSV(t, b, "POST", exportPath, map[string]any{})
	want := [][]string{
		{"transaction_id", "respondent_id", "status", "AGE", "GENDER", "ZIP", "HISPANIC", "speeder"},
		{"t-1", "P1", "Complete", "34", "Female", "10001", "", "false"},
		{"t-2", "P2", "Rejected", "", "Male", "", "Yes, Mexican, Mexican American, Chicano", "false"},
		{"t-3", "P3", "Over quota", "", "", "x, \"y\"\n日本語 🚀", "", "false"},
		{"t-4", "P4", "Quality term", "", "", "", "", "false"},
		{"t-5", "P5", "Disqualified", "", "", "", "", "false"},
		{"t-6", "P6", "In progress", "", "", "", "", "false"},
		{"t-7", "P7", "Abandoned", "", "", "", "", "false"},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("export:\n got %q\nwant %q", recs, want)
	}

	// Filters: a string or an array of strings; both together select either.
	for _, f := range []struct {
		body any
		tids []string
	}{
		{map[string]any{"transaction_ids": "t-3"}, []string{"t-3"}},
		{map[string]any{"transaction_ids": []string{"t-5", "t-1", "nope", "elsewhere"}}, []string{"t-1", "t-5"}},
		{map[string]any{"player_ids": "P2"}, []string{"t-2"}},
		{map[string]any{"player_ids": []string{"P7", "P4", "PX"}}, []string{"t-4", "t-7"}},
		{map[string]any{"player_ids": []string{"P6"}, "transaction_ids": "t-1"}, []string{"t-1", "t-6"}},
		{map[string]any{"player_ids": []string{}, "transaction_ids": nil}, []string{"t-1", "t-2", "t-3", "t-4", "t-5", "t-6", "t-7"}},
		{map[string]any{"transaction_ids": []string{"nope"}}, nil},
	} {
		recs, _ := getCSV(t, b, "POST", exportPath, f.body)
		var got []string
		for _, r := range recs[1:] {
			got = append(got, r[0])
		}
		if !reflect.DeepEqual(got, f.tids) {
			t.Errorf("filter %v: %v, want %v", f.body, got, f.tids)
		}
	}
	// Columns follow the filtered respondents' answers.
	recs, _ = getCSV(t, b, "POST", exportPath, map[string]any{"transaction_ids": "t-2"})
	if !reflect.DeepEqual(recs[0], []string{"transaction_id", "respondent_id", "status", "GENDER", "HISPANIC", "speeder"}) {
		t.Errorf("filtered header: %v", recs[0])
	}

	// Invalid filters: 422 naming the field; malformed JSON: 400.
	many := make([]string, 10_001)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, f := range []struct {
		body  any
		field string
	}{
		{map[string]any{"transaction_ids": many}, "transaction_ids"},
		{map[string]any{"player_ids": many}, "player_ids"},
		{map[string]any{"transaction_ids": 5}, "transaction_ids"},
		{map[string]any{"player_ids": []any{"a", 5}}, "player_ids"},
		{map[string]any{"player_ids": map[string]any{"a": 1}}, "player_ids"},
	} {
		r := b.Do(t, "POST", exportPath, f.body)
		if r.Status != 422 || !strings.HasPrefix(r.Message(t), f.field+" ") {
			t.Errorf("%v: %d %s", short(f.body), r.Status, r.Body)
		}
	}
	recs, _ = getCSV(t, b, "POST", exportPath, map[string]any{"transaction_ids": many[:10_000]})
	if len(recs) != 1 {
		t.Errorf("10,000 ids: %d rows", len(recs))
	}
	b.Do(t, "POST", exportPath, `{"transaction_ids": [`).Expect(t, 400)

	// Another buyer's campaign, unknown and malformed ids: 404.
	other.Do(t, "POST", exportPath, nil).Expect(t, 404)
	b.Do(t, "POST", "/api/v1/campaigns/999999/export_demographics", nil).Expect(t, 404)
	b.Do(t, "POST", "/api/v1/campaigns/x/export_demographics", nil).Expect(t, 404)
	b.Do(t, "GET", exportPath, nil).Expect(t, 405)
	req := b.Request(t, "POST", exportPath, nil)
	req.Header.Set("Accept", "application/xml")
	s.Send(t, req).Expect(t, 406)
}

// seedCompletes stores n complete sessions of campaign, each of its own participant (tids
// <prefix>-<participant id>), in one statement.
func seedCompletes(t *testing.T, s *apptest.Server, b *apptest.Buyer, campaign int64, n int, prefix string) {
	t.Helper()
	if _, err := s.DB.Pool.Exec(context.Background(), `
		WITH p AS (
			INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
			SELECT $1, $5 || '-' || g, 1, '{"43": [1], "45": ["12345"]}' FROM generate_series(1, $3::int) g RETURNING id
		)
		INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id, respondent_id, outcome, outcome_at)
		SELECT $5 || '-' || p.id, $2, $4, $1, p.id, 'R' || p.id, 'complete', now() FROM p`,
		publisher(t, s), campaign, n, b.ID, prefix); err != nil {
		t.Fatal(err)
	}
}

// TestExportAbandoned: a client that stops reading mid-download does not leak the export
// (its database connection and its slot).
func TestExportAbandoned(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)
	c := publish(t, b, newCampaign(t, b, nil))
	const n = 50_000
	seedCompletes(t, s, b, c.ID, n, "ab")
	p := path("/insights_api/projects/%d/campaigns/%d", c.ProjectID, c.ID)
	deadline := time.Now().Add(20 * time.Second)
	// send retries while every export slot is taken (503): a slot frees when the server
	// notices that an abandoned download's client went away.
	send := func() *http.Response {
		for {
			resp, err := s.Client.Do(b.Request(t, "GET", p, nil))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == 200 {
				return resp
			}
			resp.Body.Close()
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || time.Now().After(deadline) {
				t.Fatalf("status %d", resp.StatusCode)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// More abandoned downloads than export slots: every slot must come back.
	for i := 0; i < 20; i++ {
		resp := send()
		buf := make([]byte, 1024)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // drops the connection mid-body
	}
	resp := send()
	defer resp.Body.Close()
	recs, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(recs) != n+1 {
		t.Fatalf("full download: %d rows, %v", len(recs)-1, err)
	}
}

// TestExportDatabaseFailure: when the database fails mid-export the download breaks (the
// chunked body never ends) rather than ending as a short file that looks complete.
func TestExportDatabaseFailure(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)
	c := publish(t, b, newCampaign(t, b, nil))
	ctx := context.Background()
	const n = 100_000
	seedCompletes(t, s, b, c.ID, n, "f")
	resp, err := s.Client.Do(b.Request(t, "GET", path("/insights_api/projects/%d/campaigns/%d", c.ProjectID, c.ID), nil))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer resp.Body.Close()
	cr := csv.NewReader(resp.Body)
	for i := 0; i < 100; i++ {
		if _, err := cr.Read(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var killed int
	// The results export by its first words: pg_stat_activity keeps a statement's first
	// track_activity_query_size bytes (1 kB), and its WHERE lies past them.
	if err := s.DB.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'SELECT s.tid, s.entered_at, %'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d export backends: %v", killed, err)
	}
	recs, err := cr.ReadAll()
	if err == nil {
		t.Fatalf("a broken export read as a complete file of %d more rows", len(recs))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error: %v, want unexpected EOF", err)
	}
	t.Logf("broke after %d more rows, %v after the failure", len(recs), time.Since(start))
}
