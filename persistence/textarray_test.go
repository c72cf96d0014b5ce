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

// appendInt4Array reads int4[] values as PostgreSQL sends them in binary (encoded here by
// pgx), and declines what it does not handle, which the caller then scans the slow way.
func TestAppendInt4Array(t *testing.T) {
	m := pgtype.NewMap()
	enc := func(v any) []byte {
		b, err := m.Encode(pgtype.Int4ArrayOID, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := int32(7)
	for _, tc := range []struct {
		name string
		in   []byte
		want []int32
		ok   bool
	}{
		{"empty", enc([]int32{}), nil, true},
		{"values", enc([]int32{1, -2, 2147483647, 0}), []int32{1, -2, 2147483647, 0}, true},
		{"null element", enc([]*int32{&one, nil}), nil, false},
		{"two dimensions", func() []byte { b := enc([]int32{1}); b[3] = 2; return b }(), nil, false},
		{"truncated", enc([]int32{1, 2})[:27], nil, false},
		{"trailing bytes", append(enc([]int32{3}), 0), nil, false},
		{"short header", []byte{0, 0, 0}, nil, false},
	} {
		got, ok := appendInt4Array([]int32{99}, tc.in)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok && !slices.Equal(got[1:], tc.want) && !(len(got) == 1 && tc.want == nil) {
			t.Errorf("%s: %v, want %v after the 99 already there", tc.name, got, tc.want)
		}
	}
}
