package httpio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
)

// ContentTypeJSON is the content type of every JSON response.
const ContentTypeJSON = "application/json; charset=utf-8"

// MaxBody is the largest request body the JSON interfaces accept.
const MaxBody = 1 << 20

// WriteJSON encodes v with the given status.
func WriteJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	ctx.SetStatusCode(status)
	ctx.SetContentType(ContentTypeJSON)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Encoding our own response types cannot fail unless a type is wrong: a defect.
		panic(fmt.Sprintf("httpio: encode response: %v", err))
	}
	b := buf.Bytes()
	ctx.Response.SetBodyRaw(b[:len(b)-1]) // drop Encode's newline
}

// NoContent answers 204 with no body.
func NoContent(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	ctx.Response.ResetBody()
}

// DecodeJSON decodes body into v. A body that is not JSON, or not a JSON object, is a 400;
// a value of the wrong type is a 422 naming its field; a body over MaxBody is a 413. Every
// string of the body (keys included) must be valid text (ValidText), and every integer must
// lie in its field's bounds (Bounds: a range tag, else a Go int's 32 bits), else a 422
// naming the field and, for a tagged field, its bounds: the one text and range check of
// every JSON body (docs/validation.md).
func DecodeJSON(body []byte, v any) error {
	if len(body) > MaxBody {
		return fault.TooLarge("request body exceeds 1 MiB")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return fault.BadRequest("request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "body"
			}
			kind := te.Type.Kind().String()
			if lit, ok := strings.CutPrefix(te.Value, "number "); ok && integerLiteral(lit) &&
				(strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint")) {
				if b, ok := boundsAt(reflect.TypeOf(v), te.Field); ok {
					return b.Refuse(overflowPath(trimmed, te.Field))
				}
				return fault.Invalid(field, "%s", OutOfRange)
			}
			return fault.Invalid(field, "must be %s", describeType(kind))
		}
		var fe *FieldError
		if errors.As(err, &fe) {
			return fault.Invalid(fe.Field, "%s", fe.Msg)
		}
		return fault.BadRequest("request body is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fault.BadRequest("request body is not valid JSON")
	}
	if err := checkJSONText(trimmed); err != nil {
		return err
	}
	return checkRanges(reflect.ValueOf(v), "", nil)
}

// FieldError lets a custom UnmarshalJSON report a 422 naming its field.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }

func describeType(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case kind == "slice":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return "of another type"
}

// AcceptsJSON reports whether the request's Accept header admits JSON (a missing header does).
func AcceptsJSON(ctx *fasthttp.RequestCtx) bool {
	return accepts(ctx.Request.Header.Peek("Accept"), "application/json")
}

// AcceptsCSV reports whether the request's Accept header admits CSV.
func AcceptsCSV(ctx *fasthttp.RequestCtx) bool {
	return accepts(ctx.Request.Header.Peek("Accept"), "text/csv")
}

// accepts implements the subset of RFC 9110 negotiation the API needs: a media range that
// names the type, its family wildcard or */* with a non-zero q admits it.
func accepts(header []byte, mediaType string) bool {
	if len(bytes.TrimSpace(header)) == 0 {
		return true
	}
	family, _, _ := strings.Cut(mediaType, "/")
	for _, part := range strings.Split(string(header), ",") {
		rng, params, _ := strings.Cut(part, ";")
		rng = strings.ToLower(strings.TrimSpace(rng))
		if rng != mediaType && rng != family+"/*" && rng != "*/*" {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(strings.TrimSpace(params), " ", ""), "q="); ok {
			if strings.Trim(q, "0.") == "" {
				continue
			}
		}
		return true
	}
	return false
}
