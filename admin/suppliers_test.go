package admin_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

// newSupplier registers a publisher of environment env and returns its id.
func newSupplier(t *testing.T, s *apptest.Server, name, env string) int64 {
	t.Helper()
	p, _, err := s.DB.Accounts.CreatePublisher(context.Background(), persistence.NewPublisher{Name: name, CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://panel.example/back", Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// excludedOf reads excluded_supplier_ids from a campaign read.
func excludedOf(t *testing.T, c map[string]any) []int64 {
	t.Helper()
	raw, ok := c["excluded_supplier_ids"].([]any)
	if !ok {
		t.Fatalf("excluded_supplier_ids missing or not an array in %v", c)
	}
	out := []int64{}
	for _, v := range raw {
		out = append(out, int64(v.(float64)))
	}
	return out
}

// TestSupplierControls: the suppliers list is the token environment's publishers; a
// campaign's excluded_supplier_ids is set on create, replaced by an update, kept by an
// update without it, read by the detail and the list, and an id that is not a supplier is a
// 422 naming the field that changes nothing.
func TestSupplierControls(t *testing.T) {
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	a := newSupplier(t, s, "Alpha Panel", s.Env)
	live := newSupplier(t, s, "Live Panel", persistence.EnvLive)
	c := newSupplier(t, s, "Gamma Rewards", s.Env)

	var list []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	b.Do(t, "GET", "/api/v1/suppliers", nil).Expect(t, 200).Decode(t, &list)
	if len(list) != 2 || list[0].ID != a || list[0].Name != "Alpha Panel" || list[1].ID != c || list[1].Name != "Gamma Rewards" {
		t.Fatalf("suppliers = %+v, want Alpha Panel %d and Gamma Rewards %d (not the live %d)", list, a, c, live)
	}

	body := map[string]any{"name": "Tea", "incidence": 50, "length_of_interview": 10, "country_language_id": 1,
		"supplier_link": "https://survey.example/s?tid={ID}", "excluded_supplier_ids": []int64{c, a, c}}
	created := b.Do(t, "POST", "/api/v1/campaigns", body).Expect(t, 201).Object(t)
	if got := excludedOf(t, created); !slices.Equal(got, []int64{a, c}) {
		t.Fatalf("created with %v, want %v (sorted, each once)", got, []int64{a, c})
	}
	path := "/api/v1/campaigns/" + strconv.FormatInt(int64(created["id"].(float64)), 10)
	plain := b.Do(t, "POST", "/api/v1/campaigns", map[string]any{"name": "Plain", "incidence": 50, "length_of_interview": 10,
		"country_language_id": 1, "supplier_link": "https://survey.example/s?tid={ID}"}).Expect(t, 201).Object(t)
	if got := excludedOf(t, plain); len(got) != 0 {
		t.Fatalf("default excluded_supplier_ids = %v, want []", got)
	}

	if got := excludedOf(t, b.Do(t, "PUT", path, map[string]any{"excluded_supplier_ids": []int64{c}}).Expect(t, 200).Object(t)); !slices.Equal(got, []int64{c}) {
		t.Fatalf("after update: %v, want [%d]", got, c)
	}
	if got := excludedOf(t, b.Do(t, "PUT", path, map[string]any{"name": "Tea 2"}).Expect(t, 200).Object(t)); !slices.Equal(got, []int64{c}) {
		t.Fatalf("an update without the field changed it: %v", got)
	}
	for _, bad := range []any{[]int64{live}, []int64{a, 999999}, []int64{0}, []any{"x"}} {
		msg := b.Do(t, "PUT", path, map[string]any{"excluded_supplier_ids": bad}).Expect(t, 422).Message(t)
		if !strings.Contains(msg, "excluded_supplier_ids") {
			t.Errorf("%v: message %q does not name excluded_supplier_ids", bad, msg)
		}
	}
	if msg := b.Do(t, "POST", "/api/v1/campaigns", map[string]any{"name": "Bad", "incidence": 50, "length_of_interview": 10,
		"country_language_id": 1, "supplier_link": "https://survey.example/s?tid={ID}", "excluded_supplier_ids": []int64{live}}).
		Expect(t, 422).Message(t); !strings.Contains(msg, "excluded_supplier_ids") {
		t.Errorf("create: message %q does not name excluded_supplier_ids", msg)
	}
	if got := excludedOf(t, b.Do(t, "GET", path, nil).Expect(t, 200).Object(t)); !slices.Equal(got, []int64{c}) {
		t.Fatalf("detail after refused updates: %v, want [%d]", got, c)
	}
	var campaigns []map[string]any
	b.Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200).Decode(t, &campaigns)
	if len(campaigns) != 2 || !slices.Equal(excludedOf(t, campaigns[0]), []int64{c}) || len(excludedOf(t, campaigns[1])) != 0 {
		t.Fatalf("list: %v", campaigns)
	}
	if got := excludedOf(t, b.Do(t, "PUT", path, map[string]any{"excluded_supplier_ids": []int64{}}).Expect(t, 200).Object(t)); len(got) != 0 {
		t.Fatalf("[] left %v", got)
	}
}
