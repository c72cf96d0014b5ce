// Package apidocs_test checks the OpenAPI documents of internal/openapi against the whole
// running app: that it serves them, that they describe exactly the routes it registers, and
// that clients generated from them (oapi-codegen) run the README walk-through.
package apidocs_test

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/openapi"
)

// notDocumented are the registered routes that are not part of either interface: the
// operators' probes and metrics, the documents themselves, and the web console (pages for
// people, not an API; under /console).
var notDocumented = map[string]bool{
	"GET /healthz": true, "GET /readyz": true, "GET /metrics": true,
	"GET " + openapi.BuyerPath: true, "GET " + openapi.SupplyPath: true,
}

// routeLine finds every registered route in the metrics exposition, which lists each
// route's latency histogram whether or not it has served a request.
var routeLine = regexp.MustCompile(`(?m)^switchboard_http_request_duration_seconds_count\{method="([A-Z]+)",route="([^"]+)"\}`)

// TestServedAndComplete starts the whole app and checks that it serves both documents
// (public, JSON, cacheable, revalidated by ETag) and that the documents and the app's
// registered routes are the same set: a route added without documenting it, or a
// documented operation that no longer exists, fails here.
func TestServedAndComplete(t *testing.T) {
	s := apptest.Start(t, apptest.Options{})
	for path, want := range map[string][]byte{openapi.BuyerPath: openapi.Buyer(), openapi.SupplyPath: openapi.Supply()} {
		req := s.NewRequest(t, "GET", path, nil)
		req.Header.Del("Authorization")
		r := s.Send(t, req)
		if r.Status != 200 || !bytes.Equal(r.Body, want) {
			t.Fatalf("GET %s: %d, %d bytes; want 200 and the document", path, r.Status, len(r.Body))
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "public") || !strings.Contains(cc, "max-age=") {
			t.Errorf("GET %s: Cache-Control %q, want public with a max-age", path, cc)
		}
		etag := r.Header.Get("ETag")
		req = s.NewRequest(t, "GET", path, nil)
		req.Header.Set("If-None-Match", etag)
		if r := s.Send(t, req); etag == "" || r.Status != http.StatusNotModified || len(r.Body) != 0 {
			t.Errorf("GET %s with If-None-Match %s: %d, want 304 without a body", path, etag, r.Status)
		}
	}

	registered := map[string]bool{}
	for _, m := range routeLine.FindAllStringSubmatch(string(s.App.Metrics.Append(nil)), -1) {
		if m[1] != "ANY" && !notDocumented[m[1]+" "+m[2]] && !strings.HasPrefix(m[2], "/console") {
			registered[m[1]+" "+m[2]] = true
		}
	}
	documented := map[string]bool{}
	for _, doc := range loadDocs(t) {
		for path, item := range doc.Paths.Map() {
			for method := range item.Operations() {
				key := method + " " + path
				if documented[key] {
					t.Errorf("%s is in both documents", key)
				}
				documented[key] = true
			}
		}
	}
	if len(registered) < 40 {
		t.Fatalf("found only %d registered routes: is the metrics parsing broken?", len(registered))
	}
	var missing, stale []string
	for k := range registered {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !registered[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("registered routes no document describes (add them to internal/openapi/buyer.json or supply.json):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("documented operations the app does not register:\n  %s", strings.Join(stale, "\n  "))
	}
}

// loadDocs loads and validates both documents.
func loadDocs(t *testing.T) []*openapi3.T {
	t.Helper()
	var out []*openapi3.T
	for _, raw := range [][]byte{openapi.Buyer(), openapi.Supply()} {
		doc, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatal(err)
		}
		out = append(out, doc)
	}
	return out
}
