package persistence

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// appendTextArray reads text[] values as PostgreSQL sends them in binary (encoded here by
// pgx), and declines what it does not handle, which the caller then scans the slow way.
func TestAppendTextArray(t *testing.T) {
	m := pgtype.NewMap()
	enc := func(v any) []byte {
		b, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want []string
		ok   bool
	}{
		{"empty", enc([]string{}), nil, true},
		{"values", enc([]string{"10001", "", "ÉCOLE", "a\"b"}), []string{"10001", "", "ÉCOLE", "a\"b"}, true},
		{"null element", enc([]*string{nil}), nil, false},
		{"two dimensions", func() []byte { b := enc([]string{"a"}); b[3] = 2; return b }(), nil, false},
		{"truncated", enc([]string{"10001"})[:25], nil, false},
		{"trailing bytes", append(enc([]string{"x"}), 0), nil, false},
		{"short header", []byte{0, 0, 0}, nil, false},
	} {
		got, ok := appendTextArray(nil, tc.in)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		var k []string
		for _, b := range got {
			k = append(k, string(b))
		}
		if !slices.Equal(k, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, k, tc.want)
		}
	}
}
