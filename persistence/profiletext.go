package persistence

import (
	"bytes"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/switchboard/switchboard/engine"
)

// parseProfileText parses the text PostgreSQL prints for a stored profile,
// {"<question id>": [values], ...} with integer and plain string values, into
// engine answers exactly as parseProfile does, without encoding/json: the
// panel load parses millions of profiles. It reports false on anything else
// (escapes, null, fractions, nesting, out-of-range numbers, malformed text),
// for which the caller falls back to parseProfile.
func parseProfileText(raw []byte) ([]engine.Answer, bool) {
	var sc profileScratch
	return sc.parse(raw, false)
}

// profileScratch is what a bulk load reuses from one profile to the next:
// the answers, their codes and the keys seen.
type profileScratch struct {
	answers []engine.Answer
	codes   []int32
	keys    [][]byte
}

// parse is parseProfileText into sc's buffers: the answers and their codes
// are valid until the next parse into sc. With alias, texts are not copied
// but point into raw, so they are valid only as long as raw is.
func (sc *profileScratch) parse(raw []byte, alias bool) ([]engine.Answer, bool) {
	t := profileText{b: raw}
	t.space()
	if !t.eat('{') {
		return nil, false
	}
	out := sc.answers[:0]
	sc.codes = sc.codes[:0]
	defer func() { sc.answers = out[:0] }()
	keys := sc.keys[:0] // duplicate keys are left to encoding/json (the last one wins there)
	defer func() { sc.keys = keys[:0] }()
	t.space()
	if t.eat('}') {
		return out, t.end()
	}
	for {
		t.space()
		key, ok := t.str()
		if !ok || slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
			return nil, false
		}
		keys = append(keys, key)
		t.space()
		if !t.eat(':') {
			return nil, false
		}
		t.space()
		if !t.eat('[') {
			return nil, false
		}
		q, keyOK := parseInt32(key)
		a := engine.Answer{QuestionID: q}
		if !sc.values(&t, &a, alias) {
			return nil, false
		}
		if keyOK && (a.Text != "" || len(a.Codes) > 0) {
			out = append(out, a)
		}
		t.space()
		if t.eat('}') {
			break
		}
		if !t.eat(',') {
			return nil, false
		}
	}
	if !t.end() {
		return nil, false
	}
	slices.SortFunc(out, func(a, b engine.Answer) int { return int(a.QuestionID) - int(b.QuestionID) })
	for i := 1; i < len(out); i++ {
		if out[i].QuestionID == out[i-1].QuestionID {
			return nil, false // "7" and "07": their order is encoding/json's map order
		}
	}
	return out, true
}

// values parses an answer's list of values, after its '[', into a: its first non-empty
// text (aliasing t's bytes when alias) and its integer codes, kept in sc.codes. It reports
// false on anything parseProfileText declines.
func (sc *profileScratch) values(t *profileText, a *engine.Answer, alias bool) bool {
	codes := len(sc.codes)
	t.space()
	if !t.eat(']') {
		for {
			t.space()
			if t.peek() == '"' {
				s, ok := t.str()
				if !ok {
					return false
				}
				if a.Text == "" && len(s) > 0 {
					if alias {
						a.Text = unsafe.String(&s[0], len(s))
					} else {
						a.Text = string(s)
					}
				}
			} else {
				n, ok := t.int32()
				if !ok {
					return false
				}
				sc.codes = append(sc.codes, n)
			}
			t.space()
			if t.eat(']') {
				break
			}
			if !t.eat(',') {
				return false
			}
		}
	}
	if len(sc.codes) > codes {
		a.Codes = sc.codes[codes:len(sc.codes):len(sc.codes)]
	}
	return true
}

// profileText is a cursor over a profile's text.
type profileText struct {
	b []byte
	i int
}

func (t *profileText) space() {
	for t.i < len(t.b) && (t.b[t.i] == ' ' || t.b[t.i] == '\t' || t.b[t.i] == '\n' || t.b[t.i] == '\r') {
		t.i++
	}
}

func (t *profileText) peek() byte {
	if t.i < len(t.b) {
		return t.b[t.i]
	}
	return 0
}

func (t *profileText) eat(c byte) bool {
	if t.peek() == c {
		t.i++
		return true
	}
	return false
}

func (t *profileText) end() bool {
	t.space()
	return t.i == len(t.b)
}

// str reads a string of valid UTF-8 without escapes or control characters.
func (t *profileText) str() ([]byte, bool) {
	if !t.eat('"') {
		return nil, false
	}
	start := t.i
	for t.i < len(t.b) {
		c := t.b[t.i]
		switch {
		case c == '"':
			t.i++
			s := t.b[start : t.i-1]
			return s, utf8.Valid(s) // encoding/json replaces invalid bytes

		case c == '\\' || c < 0x20:
			return nil, false
		}
		t.i++
	}
	return nil, false
}

// int32 reads an integer in JSON syntax that fits in an int32.
func (t *profileText) int32() (int32, bool) {
	start := t.i
	t.eat('-')
	digits := t.i
	for t.i < len(t.b) && t.b[t.i] >= '0' && t.b[t.i] <= '9' {
		t.i++
	}
	if t.i == digits || (t.b[digits] == '0' && t.i-digits > 1) {
		return 0, false
	}
	if c := t.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, false
	}
	return parseInt32(t.b[start:t.i])
}

// parseInt32 parses an optionally negative decimal that fits in an int32, as
// strconv.ParseInt(s, 10, 32) accepts it.
func parseInt32(s []byte) (int32, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg || (len(s) > 0 && s[0] == '+') {
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	if len(s) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if n < -1<<31 || n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}
