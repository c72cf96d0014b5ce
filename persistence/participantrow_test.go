package persistence

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// FuzzDecodeParticipantRow checks that the start-up load's row decoder either
// declines a row (the load then scans it with pgx) or reads exactly what
// pgx's own decoding of the same bytes reads, in either result format.
func FuzzDecodeParticipantRow(f *testing.F) {
	be := func(n int64, size int) []byte {
		b := binary.BigEndian.AppendUint64(nil, uint64(n))
		return b[8-size:]
	}
	prof := `{"42": [30], "43": [2], "45": ["SW1A 1AA"], "633": [1, 4]}`
	f.Add(uint8(0b111111), uint8(0), be(7, 8), be(3, 8), []byte("u100000000001"), be(826, 4), append([]byte{1}, prof...), be(1_700_000_000, 8))
	f.Add(uint8(0), uint8(0), []byte("7"), []byte("3"), []byte("u1"), []byte("826"), []byte(prof), []byte("-1700000000"))
	f.Add(uint8(0b111111), uint8(0), be(-1, 8), be(3, 8), []byte(""), be(-5, 4), []byte{1, '{', '}'}, be(0, 8))
	f.Add(uint8(0b111111), uint8(0b10000), be(7, 8), be(3, 8), []byte("u"), be(1, 4), []byte{2, '{', '}'}, be(0, 7))
	f.Add(uint8(0), uint8(0), []byte("007"), []byte("+3"), []byte("u"), []byte("99999999999"), []byte(`{"1": [1.5]}`), []byte("9223372036854775808"))
	oids := []uint32{pgtype.Int8OID, pgtype.Int8OID, pgtype.TextOID, pgtype.Int4OID, pgtype.JSONBOID, pgtype.Int8OID}
	f.Fuzz(func(t *testing.T, binaryCols, nullCols uint8, id, pub, user, country, profile, last []byte) {
		vals := [][]byte{id, pub, user, country, profile, last}
		formats := make([]int16, len(vals))
		for i := range vals {
			if binaryCols&(1<<i) != 0 {
				formats[i] = pgtype.BinaryFormatCode
			}
			if nullCols&(1<<i) != 0 {
				vals[i] = nil
			} else if vals[i] == nil {
				vals[i] = []byte{}
			}
		}
		var sc profileScratch
		got, ok := sc.decodeRow(formats, vals)
		if !ok {
			return
		}
		m := pgtype.NewMap()
		var wantID, wantPub, wantLast int64
		var wantCountry int32
		var wantUser string
		var wantProf []byte
		for i, dst := range []any{&wantID, &wantPub, &wantUser, &wantCountry, &wantProf, &wantLast} {
			if err := m.Scan(oids[i], formats[i], vals[i], dst); err != nil {
				t.Fatalf("column %d (format %d, %q): decoded, but pgx refuses it: %v", i, formats[i], vals[i], err)
			}
		}
		if got.ID != wantID || got.PublisherID != wantPub || got.User != wantUser || got.CountryID != wantCountry || got.LastActive != wantLast {
			t.Fatalf("got %d %d %q %d %d, want %d %d %q %d %d", got.ID, got.PublisherID, got.User, got.CountryID, got.LastActive,
				wantID, wantPub, wantUser, wantCountry, wantLast)
		}
		want, err := parseProfile(wantProf)
		if err != nil {
			t.Fatalf("profile %q decoded, but encoding/json refuses %q: %v", profile, wantProf, err)
		}
		if len(got.Answers) != len(want) {
			t.Fatalf("%q: got %+v, want %+v", wantProf, got.Answers, want)
		}
		for i := range want {
			g := got.Answers[i]
			if g.QuestionID != want[i].QuestionID || g.Text != want[i].Text || !slices.Equal(g.Codes, want[i].Codes) {
				t.Fatalf("%q: answer %d = %+v, want %+v", wantProf, i, g, want[i])
			}
		}
	})
}
