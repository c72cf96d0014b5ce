package persistence

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/jackc/pgx/v5/pgtype"
)

// Kept lists equal what was scanned, share the storage of equal strings, and are cut so
// that appending to one never writes into the next.
func TestTextPoolKeep(t *testing.T) {
	var p textPool
	scanned := [][]string{{"10001", "10002"}, nil, {"10002", "paris"}, {}, {strings.Repeat("z", 70_000)}}
	var kept [][]string
	for _, s := range scanned {
		in := slices.Clone(s)
		k := p.keep(in)
		for i := range in {
			in[i] = "overwritten" // the scan buffer is reused for the next row
		}
		kept = append(kept, k)
	}
	for i, s := range scanned {
		if !slices.Equal(kept[i], s) || (len(s) == 0) != (kept[i] == nil) {
			t.Fatalf("list %d: kept %q, scanned %q", i, kept[i], s)
		}
	}
	if unsafe.StringData(kept[0][1]) != unsafe.StringData(kept[2][0]) {
		t.Error("two equal texts are stored twice")
	}
	kept[0] = append(kept[0], "appended")
	if kept[2][0] != "10002" {
		t.Errorf("appending to one list changed the next: %q", kept[2])
	}
	big := make([]string, textSlab+1)
	for i := range big {
		big[i] = "x"
	}
	if k := p.keep(big); len(k) != len(big) {
		t.Errorf("a list longer than a slab kept %d of %d", len(k), len(big))
	}
}

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
		var p textPool
		if k := p.keepBytes(got); !slices.Equal(k, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, k, tc.want)
		}
	}
	var p textPool
	a := p.keepBytes([][]byte{[]byte("10002")})
	b := p.keep([]string{"10002"})
	if unsafe.StringData(a[0]) != unsafe.StringData(b[0]) {
		t.Error("keepBytes and keep store an equal text twice")
	}
}
