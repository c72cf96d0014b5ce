package httpio

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestWantsCSV: a route that answers JSON or CSV answers CSV only when asked for it: an
// Accept header naming text/csv, or admitting CSV and not JSON.
func TestWantsCSV(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                false,
		"*/*":                             false,
		"application/json":                false,
		"text/*":                          true,
		"text/csv":                        true,
		"TEXT/CSV; charset=utf-8":         true,
		"application/json, text/csv":      true,
		"text/csv;q=0, application/json":  false,
		"text/csv;q=0.5, */*;q=0.1":       true,
		"text/html":                       false,
		"application/json;q=0.9, text/*":  false,
		"text/csv;q=0":                    false,
		"application/*, text/csv;q=0.001": true,
	} {
		var ctx fasthttp.RequestCtx
		if accept != "" {
			ctx.Request.Header.Set("Accept", accept)
		}
		if got := WantsCSV(&ctx); got != want {
			t.Errorf("Accept %q: CSV %v, want %v", accept, got, want)
		}
	}
}
