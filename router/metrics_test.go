package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchboard/switchboard/persistence"
)

// scrapeFamilies parses a /metrics body with Prometheus' own text parser and lints it with
// promlint (the checks `promtool check metrics` runs), failing t on any parse error or lint
// problem; it returns the families by name.
func scrapeFamilies(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v", err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	return families
}

// trafficScrape runs one real serve process through every kind of traffic the dashboards
// watch (offers, entries admitted and refused, callbacks, postbacks delivered) and returns
// its /metrics body.
func trafficScrape(t *testing.T) []byte {
	t.Helper()
	w := newWorld(t, "")
	ctx := context.Background()
	// A second publisher whose token the test keeps, for the offers call.
	pub, token, err := w.db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Offers partner", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: w.partner.srv.URL + "/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprintf("offers-user-%d", time.Now().UnixNano())
	if _, err := w.db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub.ID, User: user, CountryID: 1,
		Profile: []persistence.ProfileAnswer{{QuestionID: 42, Codes: []int32{30}}, {QuestionID: 43, Codes: []int32{1}}}},
		"test", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	w.publicURL = "http://" + addr
	w.serve(addr)
	camp, _ := w.campaign(w.publicURL, campaignOpts{quota: 3})
	ps := w.participants(5)
	w.settle()
	for _, p := range ps { // 3 completes, then 2 refusals (quota full)
		if _, _, err := w.respondent(p, camp); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("GET", w.publicURL+"/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=2", nil)
	req.Header.Set("X-Api-Token", token)
	req.Header.Set("X-User-Identifier", user)
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("offers: %d", resp.StatusCode)
	}
	waitFor(t, "the completes' postbacks", 30*time.Second, func() bool {
		w.partner.mu.Lock()
		defer w.partner.mu.Unlock()
		return len(w.partner.postbacks) >= 3
	})
	_, body := w.get(w.client, w.publicURL+"/metrics")
	return []byte(body)
}

// TestMetricsExposition: the /metrics of a real serve process after traffic is the
// Prometheus text format as Prometheus parses it and passes promlint without a problem (so
// names, units, HELP and TYPE follow the conventions), and every metric the Grafana
// dashboard (docs/grafana/switchboard.json) queries is in it, so the dashboard cannot drift
// from the code.
func TestMetricsExposition(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a serve process")
	}
	body := trafficScrape(t)
	families := scrapeFamilies(t, body)
	for _, name := range []string{"switchboard_http_requests_total", "switchboard_http_request_duration_seconds",
		"switchboard_entries_total", "switchboard_postbacks_delivered_total", "switchboard_build_info", "go_goroutines",
		"process_resident_memory_bytes"} {
		if f := families[name]; f == nil || len(f.Metric) == 0 {
			t.Errorf("%s has no sample after traffic", name)
		}
	}

	// The series names of the scrape; a family with no sample yet (no participant blocked)
	// counts by its TYPE line, which the parser drops with the empty family.
	series := map[string]bool{}
	for name, f := range families {
		series[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			series[name+"_bucket"], series[name+"_sum"], series[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			series[name+"_sum"], series[name+"_count"] = true, true
		}
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
			name, _, _ := bytes.Cut(rest, []byte(" "))
			series[string(name)] = true
		}
	}
	used := dashboardMetrics(t, "../docs/grafana/switchboard.json")
	if len(used) < 20 {
		t.Errorf("the dashboard queries only %d metrics: %v", len(used), used)
	}
	for _, name := range used {
		if !series[name] {
			t.Errorf("docs/grafana/switchboard.json queries %s, which /metrics does not expose", name)
		}
	}
	// The routes the dashboard filters on are routes of the histogram (every route has one).
	routes := map[string]bool{}
	for _, m := range families["switchboard_http_request_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" {
				routes[l.GetValue()] = true
			}
		}
	}
	for _, route := range dashboardRoutes(t, "../docs/grafana/switchboard.json") {
		if !routes[route] {
			t.Errorf("docs/grafana/switchboard.json filters on route %q, which no handler serves", route)
		}
	}
}

// routeRef finds route label matchers in the dashboard's JSON text.
var routeRef = regexp.MustCompile(`route=\\"([^"\\]+)\\"`)

// dashboardRoutes returns the route label values the dashboard's expressions match.
func dashboardRoutes(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range routeRef.FindAllSubmatch(b, -1) {
		if r := string(m[1]); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(out) < 3 {
		t.Errorf("the dashboard filters on %d routes, want the offers, entry and callback ones: %v", len(out), out)
	}
	return out
}

// metricRef finds metric names in a PromQL expression: our families and the runtime's.
var metricRef = regexp.MustCompile(`\b(?:switchboard|go|process)_[a-z0-9_]+\b`)

// dashboardMetrics returns every metric name the dashboard's panel expressions use.
func dashboardMetrics(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range metricRef.FindAllString(tg.Expr, -1) {
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
