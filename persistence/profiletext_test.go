package persistence

import (
	"slices"
	"testing"
)

// FuzzParseProfileText checks that the fast profile parser either declines
// or returns exactly what the encoding/json parser returns.
func FuzzParseProfileText(f *testing.F) {
	for _, s := range []string{
		`{"42": [30], "43": [2], "45": ["SW1A 1AA"], "633": [1, 4]}`,
		`{}`, `{"1": []}`, `{"1": [null]}`, `{"1": ["a", 2, "b"]}`, `{"x": [1]}`, `{"07": [1], "7": [2]}`,
		`{"1": [1.5]}`, `{"1": ["a\"b"]}`, `{"1": [2147483648]}`, `{"-3": [-2147483648]}`, `{"1": [1], "1": [2]}`,
		`{"1":[1]}  `, `{"1": [01]}`, `{"+1": [1]}`, `{"1": ["é"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := parseProfileText(raw)
		if !ok {
			return
		}
		want, err := parseProfile(raw)
		if err != nil {
			t.Fatalf("fast parser accepted what encoding/json refuses: %q (%v)", raw, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: got %+v, want %+v", raw, got, want)
		}
		for i := range want {
			if got[i].QuestionID != want[i].QuestionID || got[i].Text != want[i].Text || !slices.Equal(got[i].Codes, want[i].Codes) {
				t.Fatalf("%q: answer %d = %+v, want %+v", raw, i, got[i], want[i])
			}
		}
	})
}
