package httpio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// OutOfRange is what a number beyond its field's range is told where the field's bounds
// are not stated (the supply API's texts; the buyer API states them, Bounds).
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
	return walkJSON(body, func(tok json.Token, raw []byte, key bool, path func() string) error {
		t, ok := tok.(string)
		if !ok || utf8.Valid(raw) && strings.IndexByte(t, 0) < 0 {
			return nil
		}
		if key {
			return fault.Invalid(path(), "keys %s", TextRule)
		}
		return fault.Invalid(path(), TextRule)
	})
}

// overflowPath is the path, with its indexes, of the first integer of body past 64 bits
// whose path without indexes is field (the decoder's name for it), or field when none is
// found.
func overflowPath(body []byte, field string) string {
	errFound := errors.New("found")
	out := field
	_ = walkJSON(body, func(tok json.Token, _ []byte, key bool, path func() string) error {
		n, ok := tok.(json.Number)
		if !ok || key || !integerLiteral(string(n)) {
			return nil
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return nil
		}
		if p := path(); stripIndexes(p) == field {
			out = p
			return errFound
		}
		return nil
	})
	return out
}

// stripIndexes drops the [i] of a path.
func stripIndexes(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '[' {
			for i < len(p) && p[i] != ']' {
				i++
			}
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// walkJSON calls visit with every token of a JSON document (numbers as json.Number), its
// raw bytes, whether it is an object's key, and its path as a client wrote it (the keys
// joined by dots, [i] for array elements; "body" for the document itself), until visit
// returns an error, which it returns. A syntax error ends the walk (nil: the decoder
// reports it).
func walkJSON(body []byte, visit func(tok json.Token, raw []byte, key bool, path func() string) error) error {
	type frame struct {
		array   bool
		index   int    // arrays: index of the current value
		key     string // objects: key of the current value
		wantKey bool   // objects: the next string is a key
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				b.WriteByte('[')
				b.WriteString(strconv.Itoa(f.index))
				b.WriteByte(']')
				continue
			}
			if f.wantKey {
				break // the string being visited is this object's key
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
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
			continue
		case string:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				if err := visit(tok, raw, true, path); err != nil {
					return err
				}
				stack[n-1].key, stack[n-1].wantKey = t, false
				continue
			}
		}
		if err := visit(tok, raw, false, path); err != nil {
			return err
		}
		valueDone()
	}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkRanges walks a decoded request and refuses an integer outside its field's bounds
// (fieldBounds: a range tag, else a Go int's 32 bits): by convention a request's int field
// is an integer column's value (int64 fields are bigint ones), and the decoder itself
// refuses what does not fit the Go type. path names the field as the client wrote it (json
// tags, [i] for elements); a type with its own UnmarshalJSON (a nullable wrapper) is its
// field, and passes the field's bounds to its value, as do pointers and elements.
func checkRanges(v reflect.Value, path string, b *Bounds) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkRanges(v.Elem(), path, b)
	case reflect.Struct:
		t := v.Type()
		own := reflect.PointerTo(t).Implements(unmarshalerType)
		if valid := v.FieldByName("Valid"); own && valid.Kind() == reflect.Bool && !valid.Bool() {
			return nil // a nullable wrapper holding null (or nothing)
		}
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
			p, fb := path, b
			if !own && !sf.Anonymous {
				p, fb = joinPath(path, name), fieldBounds(sf)
			}
			if err := checkRanges(v.Field(i), p, fb); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw JSON, checked where it is parsed
		}
		for i := 0; i < v.Len(); i++ {
			if err := checkRanges(v.Index(i), path+"["+strconv.Itoa(i)+"]", b); err != nil {
				return err
			}
		}
	case reflect.Int, reflect.Int64:
		n := v.Int()
		switch {
		case b != nil && (n < b.Lo || n > b.Hi):
			return b.Refuse(path)
		case b == nil && v.Kind() == reflect.Int && (n > math.MaxInt32 || n < math.MinInt32):
			return fault.Invalid(path, "%s (an integer from %d to %d)", OutOfRange, math.MinInt32, math.MaxInt32)
		}
	}
	return nil
}

// Bounds are the integers a request field accepts. Every integer field of the buyer API's
// JSON bodies states its own with a range tag, `range:"lo,hi"` (`range:"lo"`: up to the
// largest the field's Go type stores as a column, 2^31 − 1 for an int, 2^63 − 1 for an
// int64). Whatever the value, below lo, past 32 bits or past 64, the client is told the
// bounds (Refuse): one message per field. A field whose values are a few codes names them
// instead with a values tag (`range:"2,5" values:"2 (active), 3 (complete) or 5
// (paused)"`), and its handler refuses a code between the bounds that is not one with
// the same message (Bounds.Refuse). A field without a range tag takes a Go int's 32 bits
// (an int64 its 64) and is told it is out of range.
type Bounds struct {
	Lo, Hi int64
	// Values, when set, names the accepted codes (the values tag).
	Values string
	// Nullable: null is accepted too (a nullable wrapper), and the message says so.
	Nullable bool
}

// Refuse is the 422 of a value outside b, naming field.
func (b Bounds) Refuse(field string) error {
	what := fmt.Sprintf("an integer from %d to %d", b.Lo, b.Hi)
	if b.Values != "" {
		what = b.Values
	}
	if b.Nullable {
		return fault.Invalid(field, "must be null or %s", what)
	}
	return fault.Invalid(field, "must be %s", what)
}

// FieldBounds are the bounds the range and values tags of field name (its Go name) of the
// struct v state, for a handler that refuses more values than the bounds do.
func FieldBounds(v any, name string) Bounds {
	sf, ok := reflect.TypeOf(v).FieldByName(name)
	if b := fieldBounds(sf); ok && b != nil {
		return *b
	}
	panic("httpio: no range tag on " + name)
}

// fieldBounds reads sf's range tag: nil when it has none. A malformed tag is a programming
// error, reported at the first request that decodes it.
func fieldBounds(sf reflect.StructField) *Bounds {
	tag, ok := sf.Tag.Lookup("range")
	if !ok {
		return nil
	}
	kind := reflect.Int
	t := sf.Type
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	own := reflect.PointerTo(t).Implements(unmarshalerType)
	if own && t.Kind() == reflect.Struct {
		if f, ok := t.FieldByName("V"); ok {
			t = f.Type
		}
	}
	if t.Kind() == reflect.Int64 {
		kind = reflect.Int64
	}
	def := typeBounds(kind)
	lo, hi, two := strings.Cut(tag, ",")
	b := &Bounds{Lo: def.Lo, Hi: def.Hi, Values: sf.Tag.Get("values"), Nullable: own}
	var err error
	if b.Lo, err = strconv.ParseInt(lo, 10, 64); err != nil {
		panic("httpio: range tag of " + sf.Name + ": " + tag)
	}
	if two {
		if b.Hi, err = strconv.ParseInt(hi, 10, 64); err != nil {
			panic("httpio: range tag of " + sf.Name + ": " + tag)
		}
	}
	return b
}

// typeBounds are the bounds of an integer field of kind stored as a column: 32 bits for an
// int, 64 for an int64.
func typeBounds(kind reflect.Kind) Bounds {
	if kind == reflect.Int64 {
		return Bounds{Lo: math.MinInt64, Hi: math.MaxInt64}
	}
	return Bounds{Lo: math.MinInt32, Hi: math.MaxInt32}
}

// boundsAt finds the bounds of the field at path (the decoder's dotted path of JSON names,
// no indexes) in t: those of its range tag; ok is false when it has none.
func boundsAt(t reflect.Type, path string) (b Bounds, ok bool) {
	var fb *Bounds
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return Bounds{}, false
		}
		var next reflect.Type
		for i := 0; i < t.NumField() && next == nil; i++ {
			sf := t.Field(i)
			tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if sf.IsExported() && (tag == name || tag == "" && sf.Name == name) {
				next, fb = sf.Type, fieldBounds(sf)
			}
		}
		if next == nil {
			return Bounds{}, false
		}
		t = next
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(unmarshalerType) {
		if f, ok := t.FieldByName("V"); ok {
			t = f.Type
		}
	}
	if fb == nil {
		return Bounds{}, false
	}
	return *fb, true
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
