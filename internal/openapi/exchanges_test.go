package openapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/switchboard/switchboard/internal/openapi"
)

// exchange is one recorded request and, unless it is a postback the server sent, the
// server's answer, as the golden files and the generated guides show them.
type exchange struct {
	source  string // file and position, for messages
	method  string
	uri     string
	reqHdr  http.Header
	reqBody string
	status  int // 0: a postback (no answer recorded)
	respHdr http.Header
	body    string
}

// The files the tests of admin and cmd/guides record exchanges into. docs/api.md is
// generated from the admin golden files and adds nothing.
var (
	goldenGlob = "../../admin/testdata/golden/*.golden"
	guideFiles = []string{"../../docs/buyer-integration.md", "../../docs/supply-api.md"}
)

// recordedExchanges reads every recorded exchange.
func recordedExchanges(t *testing.T) []exchange {
	t.Helper()
	files, err := filepath.Glob(goldenGlob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files at %s (%v)", goldenGlob, err)
	}
	var out []exchange
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parseExchange(t, filepath.Base(f), string(b)))
	}
	fence := regexp.MustCompile("(?s)```http\n(.*?)```")
	for _, f := range guideFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range fence.FindAllStringSubmatch(string(b), -1) {
			out = append(out, parseExchange(t, fmt.Sprintf("%s block %d", filepath.Base(f), i+1), m[1]))
		}
	}
	return out
}

// placeholder stands for a value the recordings replace; the stand-ins have the value's
// form (a hex signature, a unix time) so that formats and patterns are checked.
var placeholder = regexp.MustCompile(`<[a-z_ 0-9]+>`)

var standIns = map[string]string{
	"<tr_sech>":       strings.Repeat("ab", 20),
	"<a wrong hash>":  strings.Repeat("cd", 20),
	"<sech>":          strings.Repeat("ef", 32),
	"<ts>":            "1767225600",
	"<event_id>":      "evt_" + strings.Repeat("0a", 16),
	"<occurred_at>":   "2026-01-01T00:00:00.000000Z",
	"<created_at>":    "2026-01-01T00:00:00.000001Z",
	"<delivered_at>":  "2026-01-01T00:00:00.012345Z",
	"<test_event_id>": "evt_test_" + strings.Repeat("0b", 12),
	"<timestamp>":     "1767225600",
	"<signature>":     strings.Repeat("12", 32),
	"<this_hour>":     "2026-01-01T00:00:00Z",
	"<this_month>":    "2026-01",
	"<next_hour>":     "2026-01-01T01:00:00Z",
	"<ms>":            "3",
}

func standIn(s string) string {
	return placeholder.ReplaceAllStringFunc(s, func(p string) string {
		if v, ok := standIns[p]; ok {
			return v
		}
		return strings.Trim(strings.ReplaceAll(p, " ", "_"), "<>")
	})
}

// cut matches the line the guides put in place of the rest of a long array.
var cut = regexp.MustCompile(`,\n\s*… \d+ more\n`)

// parseExchange reads "METHOD URI\nheaders\n\nbody\n\nHTTP status text\nheaders\n\nbody".
func parseExchange(t *testing.T, source, text string) exchange {
	t.Helper()
	ex := exchange{source: source}
	req, resp, hasResp := strings.Cut(text, "\nHTTP ")
	var line string
	line, ex.reqHdr, ex.reqBody = parseMessage(req)
	method, uri, ok := strings.Cut(line, " ")
	if !ok {
		t.Fatalf("%s: no request line in %q", source, text)
	}
	ex.method, ex.uri = method, standIn(uri)
	if hasResp {
		line, ex.respHdr, ex.body = parseMessage("HTTP " + resp)
		f := strings.Fields(line)
		n, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("%s: status line %q", source, line)
		}
		ex.status = n
	}
	if ex.reqHdr.Get("Content-Type") == "application/json" {
		ex.reqBody = standIn(ex.reqBody)
	}
	if strings.HasPrefix(ex.respHdr.Get("Content-Type"), "application/json") {
		ex.body = standIn(ex.body)
	}
	ex.body = cut.ReplaceAllString(ex.body, "\n")
	return ex
}

func parseMessage(s string) (first string, h http.Header, body string) {
	head, body, _ := strings.Cut(s, "\n\n")
	sc := bufio.NewScanner(strings.NewReader(head))
	h = http.Header{}
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			first = sc.Text()
			continue
		}
		k, v, _ := strings.Cut(sc.Text(), ": ")
		h.Add(k, v)
	}
	return first, h, strings.TrimSpace(body)
}

// spec is a loaded document with its router.
type spec struct {
	name   string
	doc    *openapi3.T
	router routers.Router
}

func loadSpecs(t *testing.T) []spec {
	t.Helper()
	var out []spec
	for _, d := range []struct {
		name string
		raw  []byte
	}{{"buyer.json", openapi.Buyer()}, {"supply.json", openapi.Supply()}} {
		doc, err := openapi3.NewLoader().LoadFromData(d.raw)
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatalf("%s is not a valid OpenAPI document: %v", d.name, err)
		}
		doc.Servers = nil // match paths on any host
		r, err := gorillamux.NewRouter(doc)
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		out = append(out, spec{d.name, doc, r})
	}
	return out
}

func init() {
	text := func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	}
	openapi3filter.RegisterBodyDecoder("text/csv", text)
	openapi3filter.RegisterBodyDecoder("text/html", text)
}

// validate checks ex against the documents: its path and method are an operation of
// exactly one document (or, for a 405, its path is and its method is not), the request
// matches the operation when the server accepted it, the status is documented, and the
// answer's headers and body match the documented response.
func validate(specs []spec, ex exchange) error {
	ctx := context.Background()
	var body io.Reader
	if ex.reqBody != "" {
		body = strings.NewReader(ex.reqBody)
	}
	req, err := http.NewRequest(ex.method, "http://switchboard.test"+ex.uri, body)
	if err != nil {
		return err
	}
	req.Header = ex.reqHdr.Clone()
	if ex.status == 0 {
		if ex.reqHdr.Get("Host") == "buyer.example" { // a buyer's webhook delivery
			for k, vs := range req.Header {
				for i, v := range vs {
					req.Header[k][i] = standIn(v)
				}
			}
			return validateWebhook(specs, "buyerEvent", req)
		}
		return validateWebhook(specs, "partnerPostback", req)
	}
	if err := validateRedirect(specs, ex.respHdr.Get("Location")); err != nil {
		return fmt.Errorf("Location: %w", err)
	}
	var found []spec
	var route *routers.Route
	var params map[string]string
	pathKnown := false
	for _, s := range specs {
		r, p, err := s.router.FindRoute(req)
		switch {
		case err == nil:
			found, route, params = append(found, s), r, p
		case errors.Is(err, routers.ErrMethodNotAllowed):
			pathKnown = true
		}
	}
	if ex.status == http.StatusMethodNotAllowed {
		if len(found) != 0 || !pathKnown {
			return fmt.Errorf("405 for %s %s, but the documents have that method or lack the path", ex.method, ex.uri)
		}
		return validateBody(specs[0].doc.Components.Responses["E405"].Value, ex, specs[0].doc)
	}
	if len(found) != 1 {
		return fmt.Errorf("%s %s is an operation of %d documents, want 1", ex.method, ex.uri, len(found))
	}
	if err := knownQuery(req, route.PathItem.Parameters, route.Operation.Parameters); err != nil {
		return err
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if ex.status < 400 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("request: %w", err)
		}
	}
	resp := route.Operation.Responses.Status(ex.status)
	if resp == nil {
		return fmt.Errorf("status %d is not documented for %s %s", ex.status, route.Method, route.Path)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.status, Header: ex.respHdr,
		Body: io.NopCloser(strings.NewReader(ex.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("response: %w", err)
	}
	return validateBody(resp.Value, ex, found[0].doc)
}

// validateBody checks what openapi3filter lets pass: a body where none is documented, no
// body where one is, and (for a response given directly, as the 405's) the body's schema.
func validateBody(r *openapi3.Response, ex exchange, doc *openapi3.T) error {
	if len(r.Content) == 0 {
		if ex.body != "" {
			return fmt.Errorf("status %d documents no body, the server sent %q", ex.status, ex.body)
		}
		return nil
	}
	if ex.body == "" {
		return fmt.Errorf("status %d documents a body, the server sent none", ex.status)
	}
	mt := r.Content.Get(ex.respHdr.Get("Content-Type"))
	if mt == nil {
		return fmt.Errorf("status %d: content type %q is not documented", ex.status, ex.respHdr.Get("Content-Type"))
	}
	if !strings.HasPrefix(ex.respHdr.Get("Content-Type"), "application/json") {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(ex.body), &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors())
}

// validateWebhook checks a request the partner (or the buyer) receives against the webhook
// name of the document that has it.
func validateWebhook(specs []spec, name string, req *http.Request) error {
	for _, s := range specs {
		item := s.doc.Webhooks[name]
		if item == nil || item.GetOperation(req.Method) == nil {
			continue
		}
		op := item.GetOperation(req.Method)
		if err := knownQuery(req, item.Parameters, op.Parameters); err != nil {
			return err
		}
		route := &routers.Route{Spec: s.doc, Path: req.URL.Path, PathItem: item, Method: req.Method, Operation: op}
		return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: req, Route: route, Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}})
	}
	return fmt.Errorf("no webhook %s documents a %s request", name, req.Method)
}

// partnerRedirectURL is the recorded publisher's redirect URL; its own query (app=7) comes
// first and is the partner's, not the server's.
const partnerRedirectURL = "https://partner.example/back?app=7"

// validateRedirect checks a redirect to the partner's redirect URL against the
// partnerRedirect webhook; other locations (the buyer's survey, a page) are not checked.
func validateRedirect(specs []spec, location string) error {
	rest, ok := strings.CutPrefix(location, partnerRedirectURL)
	if !ok {
		return nil
	}
	req, err := http.NewRequest(http.MethodGet, "https://partner.example/back?"+strings.TrimPrefix(standIn(rest), "&"), nil)
	if err != nil {
		return err
	}
	return validateWebhook(specs, "partnerRedirect", req)
}

// knownQuery fails on a query parameter the operation does not document (openapi3filter
// lets unknown ones pass): a field the server starts sending in a postback, or reading
// from a request, must be documented.
func knownQuery(req *http.Request, lists ...openapi3.Parameters) error {
	known := map[string]bool{}
	for _, l := range lists {
		for _, p := range l {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				known[p.Value.Name] = true
			}
		}
	}
	for name := range req.URL.Query() {
		if !known[name] {
			return fmt.Errorf("query parameter %q is not documented", name)
		}
	}
	return nil
}

// TestRecordedExchanges validates every exchange the tests record against the documents.
func TestRecordedExchanges(t *testing.T) {
	specs := loadSpecs(t)
	exs := recordedExchanges(t)
	if len(exs) < 80 {
		t.Fatalf("found only %d recorded exchanges: is the parsing broken?", len(exs))
	}
	seen := map[string]bool{}
	for _, ex := range exs {
		if err := validate(specs, ex); err != nil {
			t.Errorf("%s: %s %s → %d: %v", ex.source, ex.method, ex.uri, ex.status, err)
		}
		seen[fmt.Sprint(ex.status)] = true
	}
	var statuses []string
	for s := range seen {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	t.Logf("%d exchanges validated; statuses %s", len(exs), strings.Join(statuses, " "))
}

// TestValidationFails proves that the validation catches drift: each case changes one
// recorded exchange the way a server change would, and the exchange must then fail.
func TestValidationFails(t *testing.T) {
	specs := loadSpecs(t)
	all := recordedExchanges(t)
	// find returns the first exchange of a file (golden name or guide) whose request line
	// starts with line.
	find := func(source, line string) (exchange, bool) {
		for _, ex := range all {
			if strings.HasPrefix(ex.source, source) && strings.HasPrefix(ex.method+" "+ex.uri, line) {
				return ex, true
			}
		}
		return exchange{}, false
	}
	replace := func(old, new string) func(*exchange) {
		return func(ex *exchange) { ex.body = strings.Replace(ex.body, old, new, 1) }
	}
	cases := []struct {
		name, source, line string
		mutate             func(*exchange)
	}{
		{"a field the document does not know", "campaign_create.golden", "", replace(`"wave_number": 1,`, `"wave_number": 1, "surprise": true,`)},
		{"a required field missing", "campaign_show.golden", "", replace(`"project_id": 1,`, ``)},
		{"a field of the wrong type", "quota_show.golden", "", replace(`"num_respondents": 250`, `"num_respondents": "250"`)},
		{"cpi as a number", "campaign_create.golden", "", replace(`"cpi": "1.95"`, `"cpi": 1.95`)},
		{"an error in the other interface's shape", "error_404_other_buyer.golden", "", replace(`"message"`, `"error"`)},
		{"an undocumented status", "country_languages.golden", "", func(ex *exchange) { ex.status = http.StatusAccepted }},
		{"an undocumented route", "country_languages.golden", "", func(ex *exchange) { ex.uri = "/api/v1/country_language" }},
		{"a body on a 204", "quota_delete.golden", "", func(ex *exchange) { ex.body = "{}" }},
		{"a 405 on a documented method", "error_405.golden", "", func(ex *exchange) { ex.method = http.MethodGet }},
		{"a supply offer without its entry URL", "supply-api.md", "GET /supply_api/v4/campaigns?user_ip", replace(`"offer_entry_url"`, `"entry_url"`)},
		{"a redirect without Location", "supply-api.md", "GET /supply_api/v4/entry?token=token", func(ex *exchange) { ex.respHdr.Del("Location") }},
		{"a request field the document does not know", "quota_create.golden", "", func(ex *exchange) {
			ex.reqBody = strings.Replace(ex.reqBody, `"name"`, `"title"`, 1)
		}},
		{"a postback without sech", "supply-api.md", "GET /postback", func(ex *exchange) { ex.uri = ex.uri[:strings.Index(ex.uri, "&sech=")] }},
		{"a redirect with an undocumented field", "supply-api.md", "GET /router/customers/", func(ex *exchange) {
			ex.respHdr.Set("Location", strings.Replace(ex.respHdr.Get("Location"), "&sech=", "&hops=1&sech=", 1))
		}},
		{"a redirect without its reward", "supply-api.md", "GET /router/customers/", func(ex *exchange) {
			ex.respHdr.Set("Location", strings.Replace(ex.respHdr.Get("Location"), "&reward=125", "", 1))
		}},
		{"a postback with an undocumented field", "supply-api.md", "GET /postback", func(ex *exchange) {
			ex.uri = strings.Replace(ex.uri, "&sech=", "&hops=2&sech=", 1)
		}},
		{"a request with an undocumented query parameter", "campaigns_list.golden", "", func(ex *exchange) { ex.uri += "&status=2" }},
		{"a campaign status the document does not list", "campaign_show_system_paused.golden", "", replace(`"status": 7`, `"status": 8`)},
		{"a listed campaign in a status the document does not list", "campaigns_list_every_status.golden", "", replace(`"status": 4`, `"status": 1`)},
		{"a status a buyer may not set", "campaign_complete.golden", "", func(ex *exchange) {
			ex.reqBody = strings.Replace(ex.reqBody, `"status": 3`, `"status": 6`, 1)
		}},
		{"a device the document does not list", "campaign_create_tablets.golden", "", replace(`"supported_devices": [
    0
  ]`, `"supported_devices": [
    3
  ]`)},
		{"a postback list filter outside the delivery states", "supply-api.md", "GET /supply_api/v4/postbacks?status=", func(ex *exchange) {
			ex.uri = strings.Replace(ex.uri, "status=retrying,dead", "status=retrying,delivered", 1)
		}},
		{"a postback with an unknown status", "supply-api.md", "GET /postback", func(ex *exchange) {
			ex.uri = strings.Replace(ex.uri, "status=complete", "status=done", 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex, ok := find(c.source, c.line)
			if !ok {
				t.Fatalf("no recorded exchange %s %q", c.source, c.line)
			}
			if err := validate(specs, ex); err != nil {
				t.Fatalf("the unchanged exchange fails: %v", err)
			}
			ex.reqHdr, ex.respHdr = ex.reqHdr.Clone(), ex.respHdr.Clone()
			before := ex.body + ex.reqBody + ex.uri + ex.method + fmt.Sprint(ex.status, ex.respHdr)
			c.mutate(&ex)
			if before == ex.body+ex.reqBody+ex.uri+ex.method+fmt.Sprint(ex.status, ex.respHdr) {
				t.Fatal("the mutation changed nothing")
			}
			err := validate(specs, ex)
			if err == nil {
				t.Fatal("the changed exchange passes validation")
			}
			t.Logf("rejected: %.200s", err)
		})
	}
}
