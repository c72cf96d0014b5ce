package httpio

import (
	"encoding/json"
	"testing"

	"github.com/switchboard/switchboard/internal/fault"
)

type textNullable struct {
	Valid bool
	V     int
}

func (n *textNullable) UnmarshalJSON(b []byte) error {
	n.Valid = true
	return json.Unmarshal(b, &n.V)
}

type textBody struct {
	Name   *string            `json:"name"`
	Count  *int               `json:"count"`
	ID     *int64             `json:"id"`
	Codes  []int              `json:"codes"`
	Max    textNullable       `json:"max"`
	Quals  []textQual         `json:"quals"`
	Attrs  map[string]string  `json:"attrs"`
	Raw    json.RawMessage    `json:"raw"`
	Nested map[string]any     `json:"nested"`
	Skip   int                `json:"-"`
	Days   *int               `json:"days" range:"1,365"`
	Ref    *int64             `json:"ref" range:"1"`
	Kind   *int               `json:"kind" range:"2,5" values:"2 (a), 3 (b) or 5 (c)"`
	Cap    textNullable       `json:"cap" range:"0"`
	_      struct{ X string } // unexported: never walked
}

type textQual struct {
	QuestionID *int     `json:"question_id"`
	PreCodes   []string `json:"pre_codes"`
	Weights    []int    `json:"weights" range:"1,9"`
}

// TestDecodeJSONTextAndRange: every string of a body (keys too) must be valid text, every Go
// int must fit 32 bits, and the 422 names the field as the client wrote it.
func TestDecodeJSONTextAndRange(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		kind       fault.Kind
		field, msg string
	}{
		{"valid", `{"name":"café","count":3,"codes":[1,2],"quals":[{"question_id":1,"pre_codes":["a"]}]}`, 0, "", ""},
		{"escaped backslash u0000 is text", `{"name":"a\\u0000b"}`, 0, "", ""},
		{"nul in name", `{"name":"a\u0000"}`, fault.KindInvalid, "name", "name " + TextRule},
		{"invalid utf8 in name", "{\"name\":\"a\xffb\"}", fault.KindInvalid, "name", "name " + TextRule},
		{"nul in nested array", `{"quals":[{"pre_codes":["1"]},{"question_id":2,"pre_codes":["ok","x\u0000"]}]}`,
			fault.KindInvalid, "quals[1].pre_codes[1]", ""},
		{"nul in map key", `{"attrs":{"k\u0000":"v"}}`, fault.KindInvalid, "attrs", "attrs keys " + TextRule},
		{"nul in map value", `{"attrs":{"k":"v\u0000"}}`, fault.KindInvalid, "attrs.k", ""},
		{"nul in raw message", `{"raw":[{"a":["\u0000"]}]}`, fault.KindInvalid, "raw[0].a[0]", ""},
		{"nul in unknown field key", `{"x\u0000":1}`, fault.KindInvalid, "body", ""},
		{"nul in unknown field", `{"zzz":{"a":1,"b":"\u0000"}}`, fault.KindInvalid, "zzz.b", ""},
		{"int32 max", `{"count":2147483647}`, 0, "", ""},
		{"int32 overflow", `{"count":2147483648}`, fault.KindInvalid, "count", ""},
		{"int32 underflow", `{"count":-2147483649}`, fault.KindInvalid, "count", ""},
		{"int64 overflow", `{"id":9223372036854775808}`, fault.KindInvalid, "id", "id " + OutOfRange},
		{"int overflow beyond 64 bits", `{"count":99999999999999999999999}`, fault.KindInvalid, "count", "count " + OutOfRange},
		{"fraction is not out of range", `{"count":1.5}`, fault.KindInvalid, "count", "count must be an integer"},
		{"slice element overflow", `{"codes":[1,4294967296]}`, fault.KindInvalid, "codes[1]", ""},
		{"nullable overflow", `{"max":2147483648}`, fault.KindInvalid, "max", ""},
		{"nested overflow", `{"quals":[{"question_id":3000000000}]}`, fault.KindInvalid, "quals[0].question_id", ""},
		{"not json", "{\"name\":\"\x00\"}", fault.KindBadRequest, "", ""},
		// A field with a range tag states its bounds, the same below them, past 32 and past 64 bits.
		{"in bounds", `{"days":365,"ref":9223372036854775807,"kind":5,"cap":0,"quals":[{"weights":[1,9]}]}`, 0, "", ""},
		{"below bounds", `{"days":0}`, fault.KindInvalid, "days", "days must be an integer from 1 to 365"},
		{"past 32 bits", `{"days":2147483648}`, fault.KindInvalid, "days", "days must be an integer from 1 to 365"},
		{"past 64 bits", `{"days":99999999999999999999}`, fault.KindInvalid, "days", "days must be an integer from 1 to 365"},
		{"int64 past 64 bits", `{"ref":-99999999999999999999}`, fault.KindInvalid, "ref", "ref must be an integer from 1 to 9223372036854775807"},
		{"codes", `{"kind":7}`, fault.KindInvalid, "kind", "kind must be 2 (a), 3 (b) or 5 (c)"},
		{"codes past 64 bits", `{"kind":99999999999999999999}`, fault.KindInvalid, "kind", "kind must be 2 (a), 3 (b) or 5 (c)"},
		{"nullable", `{"cap":-1}`, fault.KindInvalid, "cap", "cap must be null or an integer from 0 to 2147483647"},
		{"element past 64 bits", `{"quals":[{},{"weights":[1,99999999999999999999]}]}`, fault.KindInvalid, "quals[1].weights[1]",
			"quals[1].weights[1] must be an integer from 1 to 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v textBody
			err := DecodeJSON([]byte(tc.body), &v)
			if tc.kind == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Kind != tc.kind {
				t.Fatalf("got %v, want kind %v", err, tc.kind)
			}
			if f.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", f.Field, tc.field, f.Message)
			}
			if tc.msg != "" && f.Message[:min(len(f.Message), len(tc.msg))] != tc.msg {
				t.Errorf("message %q, want prefix %q", f.Message, tc.msg)
			}
		})
	}
}

func TestValidText(t *testing.T) {
	for s, want := range map[string]bool{"": true, "abc": true, "é€😀": true, "a\x00": false, "\xff": false, "\xc3": false} {
		if got := ValidText(s); got != want {
			t.Errorf("ValidText(%q) = %v", s, got)
		}
		if got := ValidTextBytes([]byte(s)); got != want {
			t.Errorf("ValidTextBytes(%q) = %v", s, got)
		}
		if err := CheckText("f", s); (err == nil) != want {
			t.Errorf("CheckText(%q) = %v", s, err)
		}
	}
}

// FuzzDecodeJSON: whatever the body, DecodeJSON answers a client fault or nil, never panics,
// and what it accepts holds only valid text and 32-bit ints.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"a\u0000"}`, "{\"name\":\"\xff\"}", `{"count":2147483648}`,
		`{"quals":[{"question_id":1,"pre_codes":["\u0000"]}]}`, `{"attrs":{"\u0000":"x"}}`, `{"max":null}`,
		`{"id":99999999999999999999}`, `[`, `{"raw":{"a":[1,{"b":"\ud800"}]}}`, `{"days":0,"ref":99999999999999999999}`,
		`{"quals":[{"weights":[1,99999999999999999999]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v textBody
		err := DecodeJSON(body, &v)
		if err != nil {
			if k := fault.KindOf(err); k != fault.KindBadRequest && k != fault.KindInvalid && k != fault.KindTooLarge {
				t.Fatalf("DecodeJSON(%q): %v (kind %v)", body, err, k)
			}
			return
		}
		if v.Name != nil && !ValidText(*v.Name) {
			t.Fatalf("accepted name %q", *v.Name)
		}
		for k, s := range v.Attrs {
			if !ValidText(k) || !ValidText(s) {
				t.Fatalf("accepted attrs %q: %q", k, s)
			}
		}
		if v.Count != nil && (*v.Count > 1<<31-1 || *v.Count < -1<<31) {
			t.Fatalf("accepted count %d", *v.Count)
		}
		if v.Days != nil && (*v.Days < 1 || *v.Days > 365) || v.Ref != nil && *v.Ref < 1 || v.Cap.Valid && v.Cap.V < 0 {
			t.Fatalf("accepted a value outside its bounds: %s", body)
		}
	})
}
