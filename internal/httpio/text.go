package httpio

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboard/switchboard/internal/fault"
)

// Every text that comes from outside and may reach PostgreSQL is checked once, where it is
// decoded: PostgreSQL's text refuses NUL and invalid UTF-8, and a value it refuses must be
// the client's 4xx naming the field, not the server's 500 (docs/validation.md).

// TextRule is what an invalid text is told: the end of the message naming its field.
const TextRule = "must be valid UTF-8 text without NUL characters"

// OutOfRange is what a number beyond its field's range is told.
const OutOfRange = "is out of range"

// ValidText reports whether s may be stored as PostgreSQL text: valid UTF-8 and no NUL.
func ValidText(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// ValidTextBytes is ValidText for bytes (headers and query values as fasthttp hands them).
func ValidTextBytes(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// CheckText is the check of one decoded text field: a 422 naming field when s is not valid
// UTF-8 or holds NUL. JSON bodies need not call it: DecodeJSON checks every string of the
// body (keys included) the same way.
func CheckText(field, s string) error {
	if !ValidText(s) {
		return fault.Invalid(field, TextRule)
	}
	return nil
}

// IsRangeError reports whether err is strconv's "value out of range": the text is an
// integer, but beyond the bits asked for.
func IsRangeError(err error) bool {
	return errors.Is(err, strconv.ErrRange)
}

var nulEscape = []byte(`\u0000`)

// checkJSONText finds the first string of a JSON document (key or value) that is not valid
// text and reports it as a 422 naming its path, e.g. campaign_qualifications[0].pre_codes[1].
// A document with valid UTF-8 and no \u0000 escape is skipped without parsing; syntax errors
// are left to the decoder.
func checkJSONText(body []byte) error {
	if utf8.Valid(body) && !bytes.Contains(body, nulEscape) {
		return nil
	}
	type frame struct {
		array   bool
		index   int    // arrays: index of the current value
		key     string // objects: key of the current value
		wantKey bool   // objects: the next string is a key
	}
	var stack []frame
	path := func(last string) string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				b.WriteByte('[')
				b.WriteString(strconv.Itoa(f.index))
				b.WriteByte(']')
				continue
			}
			if f.wantKey {
				break // the string being checked is this object's key
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		if last != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(last)
		}
		if b.Len() == 0 {
			return "body"
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	prev := dec.InputOffset()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		end := dec.InputOffset()
		raw := body[prev:end]
		prev = end
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{array: t == '[', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			bad := !utf8.Valid(raw) || strings.IndexByte(t, 0) >= 0
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				if bad {
					return fault.Invalid(path(""), "keys %s", TextRule)
				}
				stack[n-1].key, stack[n-1].wantKey = t, false
				continue
			}
			if bad {
				return fault.Invalid(path(""), TextRule)
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkRanges walks a decoded request and refuses a Go int beyond 32 bits: by convention a
// request's int field is an integer column's value (int64 fields are bigint ones), and the
// decoder itself refuses what does not fit the Go type. path names the field as the client
// wrote it (json tags, [i] for elements); a type with its own UnmarshalJSON (a nullable
// wrapper) is its field.
func checkRanges(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkRanges(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		own := reflect.PointerTo(t).Implements(unmarshalerType)
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			p := path
			if !own && !sf.Anonymous {
				p = joinPath(path, name)
			}
			if err := checkRanges(v.Field(i), p); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw JSON, checked where it is parsed
		}
		for i := 0; i < v.Len(); i++ {
			if err := checkRanges(v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Int:
		if n := v.Int(); n > math.MaxInt32 || n < math.MinInt32 {
			return fault.Invalid(path, "%s (an integer from %d to %d)", OutOfRange, math.MinInt32, math.MaxInt32)
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// integerLiteral reports whether s is a JSON integer literal (no fraction, no exponent).
func integerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
