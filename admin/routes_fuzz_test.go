package admin_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// FuzzBuyerRoutes sends any body to every buyer route that decodes one, through the real
// server and database: no body may make a 5xx (a NUL or invalid UTF-8 text, a huge number,
// a wrong type: all are the client's 4xx). Queries of the GET routes are fuzzed too.
func FuzzBuyerRoutes(f *testing.F) {
	s := apptest.Start(f, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(f)
	id := createCampaign(f, b, nil)
	q := createQuota(f, b, id, nil)
	routes := []struct{ method, path string }{
		{"POST", "/api/v1/campaigns"},
		{"PUT", fmt.Sprintf("/api/v1/campaigns/%d", id)},
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", id)},
		{"PUT", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas/%d", id, q)},
		{"POST", "/api/v1/adhoc_accounts"},
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/reject_completes", id)},
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_exclusions", id)},
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/export_demographics", id)},
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_retargets", id)},
		{"DELETE", fmt.Sprintf("/api/v1/campaigns/%d/campaign_retargets", id)},
		{"POST", "/api/v1/campaign_relationships"},
		{"POST", "/api/v1/custom_qualifications"},
		{"POST", "/api/v1/custom_qualifications/1/custom_qualification_answers"},
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_qualifications", id)},
		{"PUT", fmt.Sprintf("/api/v1/campaigns/%d/campaign_qualifications/1", id)},
		{"POST", "/api/v1/campaigns/realtime_feasibility"},
		{"GET", "/api/v1/qualifications?country_language_id="},
		{"GET", "/api/v1/campaigns?country_language_id="},
		{"GET", "/insights_api/projects?page="},
		{"GET", "/insights_api/projects?project_type="},
		{"GET", "/api/v1/webhook/deliveries?status="},
		{"GET", "/api/v1/webhook/deliveries?before_id="},
		{"POST", "/api/v1/webhook/test"},
		{"PUT", "/api/v1/webhook"},
		// reconcile last: it closes the campaign, and the seeds run in order.
		{"POST", fmt.Sprintf("/api/v1/campaigns/%d/reconcile", id)},
	}
	for i := range routes {
		for _, body := range []string{
			`{}`, `{"name":"a\u0000b"}`, "{\"name\":\"\xff\"}", `{"num_respondents":2147483648}`,
			`{"transaction_ids":["\u0000"],"player_ids":"\u0000","accepted_ids":["\xc3\x28"],"purchase_order":"\u0000"}`,
			`{"buyer_name":"\u0000","buyer_identifier":"x"}`, `{"retargeting_type":1,"retargeting_ids":[{"id":"\u0000"}]}`,
			`{"campaign_qualifications":[{"question_id":45,"pre_codes":["\u0000",99999999999999999999]}]}`,
			`{"incidence":1e400,"cpi":"1e400","country_language_id":-99999999999}`, `%00`, `%ff`, `99999999999999999999`,
		} {
			f.Add(uint8(i), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := routes[int(route)%len(routes)]
		path, payload := r.path, any(body)
		if r.method == "GET" {
			path, payload = path+urlQueryEscape(body), nil
			if _, err := url.Parse(s.URL + r.path + string(body)); err == nil {
				path = r.path + string(body) // as sent: "%00" reaches the parser as a NUL
			}
		}
		resp, err := s.Try(b.Request(t, r.method, path, payload))
		if err != nil {
			t.Skip("the client refused the request:", err)
		}
		if resp.Status >= 500 {
			t.Fatalf("%s %s %q: %d %s", r.method, path, body, resp.Status, resp.Body)
		}
	})
}

// urlQueryEscape percent-encodes every byte but unreserved ones, so that any bytes reach
// the query parser.
func urlQueryEscape(b []byte) string {
	const hex = "0123456789ABCDEF"
	out := make([]byte, 0, 3*len(b))
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' {
			out = append(out, c)
			continue
		}
		out = append(out, '%', hex[c>>4], hex[c&15])
	}
	return string(out)
}
