package persistence

import (
	"encoding/binary"
	"unsafe"

	"github.com/jackc/pgx/v5/pgtype"
)

// decodeRow decodes the raw values of one row of participantColumns (as the
// start-up load reads them) without pgx's Scan: a bulk load decodes millions.
// formats are the result formats of the columns (pgtype.TextFormatCode or
// BinaryFormatCode, as the server sent them). User and the answer texts point
// into vals, the answers into sc; see LoadActiveParticipants for how long they
// are valid. It reports false for anything it does not expect (a NULL, a
// length or format it does not know, a profile parseProfileText declines), for
// which the caller scans the row the ordinary way.
func (sc *profileScratch) decodeRow(formats []int16, vals [][]byte) (PanelParticipant, bool) {
	var p PanelParticipant
	if len(vals) != 6 || len(formats) != 6 {
		return p, false
	}
	var ok [5]bool
	p.ID, ok[0] = rawInt(formats[0], vals[0], 8)
	p.PublisherID, ok[1] = rawInt(formats[1], vals[1], 8)
	country, okCountry := rawInt(formats[3], vals[3], 4)
	p.CountryID = int32(country)
	p.LastActive, ok[2] = rawInt(formats[5], vals[5], 8)
	ok[3], ok[4] = okCountry, vals[2] != nil
	if ok != [5]bool{true, true, true, true, true} {
		return p, false
	}
	if u := vals[2]; len(u) > 0 {
		p.User = unsafe.String(&u[0], len(u))
	}
	prof := vals[4]
	if prof == nil {
		return p, false
	}
	if formats[4] == pgtype.BinaryFormatCode { // jsonb's binary form: version 1, then the text
		if len(prof) == 0 || prof[0] != 1 {
			return p, false
		}
		prof = prof[1:]
	}
	answers, okProf := sc.parse(prof, true)
	if !okProf {
		return p, false
	}
	p.Answers = answers
	return p, true
}

// rawInt decodes an integer value of size bytes (8 for bigint, 4 for int) in
// the given format; false for NULL or a malformed value.
func rawInt(format int16, v []byte, size int) (int64, bool) {
	switch {
	case v == nil:
		return 0, false
	case format == pgtype.BinaryFormatCode && len(v) == size && size == 8:
		return int64(binary.BigEndian.Uint64(v)), true
	case format == pgtype.BinaryFormatCode && len(v) == size && size == 4:
		return int64(int32(binary.BigEndian.Uint32(v))), true
	case format == pgtype.TextFormatCode:
		if size == 4 {
			n, ok := parseInt32(v)
			return int64(n), ok
		}
		return parseInt64(v)
	}
	return 0, false
}

// parseInt64 parses a decimal bigint as PostgreSQL prints it: an optional
// minus sign and digits, no leading zeros beyond a single 0.
func parseInt64(s []byte) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), true // -(1<<63) wraps to itself
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}
