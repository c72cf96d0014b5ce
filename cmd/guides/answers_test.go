package guides_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence"
)

// TestGuidesAnswer checks that the generated guides answer the questions an integrator
// asks on the first day, each by the words its answer must contain, and that the postback
// list's filter and its rows' statuses are one vocabulary, listed as the code has it.
func TestGuidesAnswer(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("../../docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	buyer, partner := read("buyer-integration.md"), read("supply-api.md")
	for _, q := range []struct {
		question, doc string
		words         []string
	}{
		{"Which public URL are end links signed against?", buyer,
			[]string{"**Which public URL.**", "byte for\nbyte", "`http://127.0.0.1:8080`", "`redirect_test_url`"}},
		{"Where is the OpenAPI document?", buyer, []string{"(openapi/buyer.json)", "(openapi/supply.json)", "`/openapi/buyer.json`"}},
		{"Where do customer_id and api_secret come from?", buyer, []string{"`switchboard buyer create`", "`customer_id`"}},
		{"What are the demo's customer_id and api_secret?", buyer, []string{"customer_id\n`demo-customer`", "api_secret `demo-buyer-secret`"}},
		{"How soon does an activation reach the offers?", buyer, []string{"An activation reaches the offers of every server within a second"}},
		{"Whose id does reconcile answer?", buyer, []string{"**reconciliation's** id, not the campaign's"}},
		{"How does a partner change its redirect or postback URL?", partner,
			[]string{"**Changing your redirect or postback URL.**", "`switchboard publisher update --id <publisher_id> --redirect-url <url>`", "`--postback-url <url>`"}},
	} {
		for _, w := range q.words {
			if !strings.Contains(q.doc, w) {
				t.Errorf("%s: the guide lacks %q", q.question, w)
			}
		}
	}
	for _, f := range []string{"openapi/buyer.json", "openapi/supply.json"} {
		if _, err := os.Stat(filepath.Join("../../docs", f)); err != nil {
			t.Errorf("the buyer guide links %s: %v", f, err)
		}
	}

	// The postback list: one table of the states, the rows' statuses and the filter's words.
	table := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| .*$")
	_, section, ok := strings.Cut(partner, "| `status` | The postback |")
	if !ok {
		t.Fatal("supply-api.md has no table of the postback list's statuses")
	}
	var listed []string
	for _, m := range table.FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
		if len(listed) == len(persistence.PostbackStates) {
			break
		}
	}
	if strings.Join(listed, ",") != strings.Join(persistence.PostbackStates, ",") {
		t.Errorf("supply-api.md lists the postback states %v, want %v", listed, persistence.PostbackStates)
	}
	if strings.Contains(partner, "failed|dead|pending") {
		t.Error("supply-api.md still lists the filter values failed|dead|pending")
	}
}
