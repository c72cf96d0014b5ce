package supply_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestImpanelBadText: a NUL or invalid UTF-8 in a ZIP answer, an attribute key or an
// attribute value is a 422 {"error"} naming the field, and no participant is stored (it
// was a 500 from PostgreSQL).
func TestImpanelBadText(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	user := newUser()
	for _, c := range []struct {
		name  string
		edit  func(b map[string]any)
		field string
	}{
		{"zip answer", func(b map[string]any) { b["profile_data"] = usProfile(30, 1, "94@@105") }, "profile_data[2].values[0]"},
		{"attribute key", func(b map[string]any) { b["attributes_hash"] = map[string]any{"k@@": "v"} }, "attributes_hash keys"},
		{"attribute value", func(b map[string]any) { b["attributes_hash"] = map[string]any{"k": "v@@"} }, "attributes_hash.k"},
		{"unknown field", func(b map[string]any) { b["extra"] = []string{"@@"} }, "extra[0]"},
	} {
		for name, bad := range map[string]string{"nul": `\u0000`, "invalid utf-8": "\xff\xfe"} {
			b := p.impanelBody(user, 1, usProfile(30, 1, "94105"))
			c.edit(b)
			raw, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			body := strings.Replace(string(raw), "@@", bad, 1)
			r := p.impanelRaw(t, user, "", body)
			if r.Status != 422 {
				t.Errorf("%s with %s: %d %s, want 422", c.name, name, r.Status, r.Body)
				continue
			}
			if msg := errorOf(t, r); !strings.HasPrefix(msg, c.field+" ") || !strings.Contains(msg, "UTF-8") {
				t.Errorf("%s with %s: error %q does not name %s", c.name, name, msg, c.field)
			}
		}
	}
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM participants WHERE user_identifier = $1`, user).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a refused impanel stored a participant: %d %v", n, err)
	}
	// The same body with valid text is stored: the refusals were for the text alone.
	p.impanel(t, user, 1, usProfile(30, 1, "94105")...)
}

// TestSupplyNumbersOutOfRange: a number beyond its field's range says "out of range",
// naming the field, in the impanel body and in query strings.
func TestSupplyNumbersOutOfRange(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	user := newUser()
	big, huge := json.Number("2147483648"), json.Number("99999999999999999999999")
	for _, c := range []struct {
		name   string
		edit   func(b map[string]any)
		status int
		field  string
	}{
		{"country_id", func(b map[string]any) { b["country_id"] = big }, 422, "country_id"},
		{"question_id", func(b map[string]any) { b["profile_data"] = usProfile(30, 1, "1", answer(0, 1)); setQ(b, 3, huge) }, 422, "profile_data[3].question_id"},
		{"pre_code", func(b map[string]any) { b["profile_data"] = usProfile(30, 1, "1", answer(110, big)) }, 422, "profile_data[3].values[0]"},
		{"age", func(b map[string]any) { b["profile_data"] = usProfile(30, 1, "1"); setV(b, 0, json.Number("1e400")) }, 422, "profile_data[0].values[0]"},
		{"age as string", func(b map[string]any) { b["profile_data"] = usProfile(30, 1, "1"); setV(b, 0, string(huge)) }, 422, "profile_data[0].values[0]"},
		{"attribute number", func(b map[string]any) { b["attributes_hash"] = map[string]any{"n": json.Number("1e999999")} }, 422, "attributes_hash.n"},
		{"ts", func(b map[string]any) { b["ts"] = huge }, 401, "ts"},
	} {
		b := p.impanelBody(user, 1, usProfile(30, 1, "94105"))
		c.edit(b)
		r := p.impanelRaw(t, user, "", b)
		if r.Status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.Status, r.Body, c.status)
			continue
		}
		if msg := errorOf(t, r); !strings.HasPrefix(msg, c.field+" is out of range") {
			t.Errorf("%s: error %q, want %s out of range", c.name, msg, c.field)
		}
	}
	r := p.do(t, "GET", "/supply_api/v4/qualifications?country_id=2147483648", nil, nil)
	if r.Status != 400 || errorOf(t, r) != "country_id is out of range" {
		t.Errorf("qualifications?country_id=2147483648: %d %s", r.Status, r.Body)
	}
}

func setQ(b map[string]any, i int, v any) { b["profile_data"].([]map[string]any)[i]["question_id"] = v }

func setV(b map[string]any, i int, v any) {
	b["profile_data"].([]map[string]any)[i]["values"] = []any{v}
}
