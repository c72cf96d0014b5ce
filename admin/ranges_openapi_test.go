package admin

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/internal/httpio"
)

// requestTypes are the Go types that decode the buyer API's request schemas, by schema
// name; nil: a schema without integer fields (its handler decodes into strings or raw
// JSON).
var requestTypes = map[string]any{
	"CampaignCreate":              campaignBody{},
	"CampaignUpdate":              campaignBody{},
	"QuotaCreate":                 quotaBody{},
	"QuotaUpdate":                 quotaBody{},
	"QuotaQualification":          qualificationBody{},
	"RealtimeFeasibilityRequest":  realtimeBody{},
	"RetargetsAdd":                retargetBody{},
	"RetargetsRemove":             retargetBody{},
	"RelationshipRequest":         relationshipBody{},
	"CustomQualificationRequest":  customQuestionBody{},
	"CampaignQualificationCreate": customQualificationBody{},
	"CampaignQualificationUpdate": customQualificationBody{},
	"RejectCompletesRequest":      nil,
	"ReconcileRequest":            nil,
	"ExclusionsRequest":           nil,
	"ExportRequest":               nil,
	"CustomAnswerRequest":         nil,
	"AdhocAccountRequest":         nil,
	"WebhookRequest":              nil,
}

// schemaBounds are the integer bounds an OpenAPI schema states: minimum and maximum, or the
// least and greatest of its enum; through array items and oneOf variants. ok: it states
// some (a half-stated pair counts, so that the comparison refuses it).
func schemaBounds(s map[string]any) (lo, hi int64, ok bool) {
	if items, isMap := s["items"].(map[string]any); isMap {
		return schemaBounds(items)
	}
	if variants, isList := s["oneOf"].([]any); isList {
		for _, v := range variants {
			if m, isMap := v.(map[string]any); isMap {
				if lo, hi, ok := schemaBounds(m); ok {
					return lo, hi, true
				}
			}
		}
		return 0, 0, false
	}
	integer := func(v any) (int64, bool) {
		n, isNum := v.(json.Number)
		if !isNum {
			return 0, false
		}
		i, err := n.Int64()
		return i, err == nil
	}
	if enum, isList := s["enum"].([]any); isList {
		var ns []int64
		for _, e := range enum {
			if n, ok := integer(e); ok {
				ns = append(ns, n)
			}
		}
		if len(ns) > 0 {
			return slices.Min(ns), slices.Max(ns), true
		}
	}
	mn, hasMin := integer(s["minimum"])
	mx, hasMax := integer(s["maximum"])
	return mn, mx, hasMin || hasMax
}

// TestRangeTagsMatchOpenAPI: the bounds every integer field of a buyer request states in
// its range tag (what DecodeJSON, and DecodeQuota for pre_codes, enforce and tell the
// client) are the minimum and maximum (or the enum's least and greatest) the OpenAPI
// document states for the same field of the schemas the Go type decodes, and the document
// bounds no integer the validators do not. Every request body of the document is covered: a new one needs its Go type here.
func TestRangeTagsMatchOpenAPI(t *testing.T) {
	raw, err := os.ReadFile("../internal/openapi/buyer.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Schemas map[string]map[string]any }
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	// The schemas of request bodies, and those they refer to.
	var names []string
	var refs func(v any)
	refs = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				name := strings.TrimPrefix(r, "#/components/schemas/")
				if !slices.Contains(names, name) {
					names = append(names, name)
					refs(doc.Components.Schemas[name])
				}
			}
			for _, x := range v {
				refs(x)
			}
		case []any:
			for _, x := range v {
				refs(x)
			}
		}
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			var o struct {
				RequestBody struct {
					Content map[string]struct{ Schema any }
				}
			}
			if err := json.Unmarshal(op, &o); err != nil {
				continue // not an operation (parameters shared by the path)
			}
			for ct, c := range o.RequestBody.Content {
				if _, isMap := c.Schema.(map[string]any)["$ref"]; !isMap && ct == "application/json" {
					if props, _ := c.Schema.(map[string]any)["properties"].(map[string]any); len(props) > 0 {
						t.Errorf("%s %s: an inline request schema with properties; give it a named schema", method, path)
					}
				}
				refs(c.Schema)
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("found %d request schemas in buyer.json", len(names))
	}
	for _, name := range names {
		schema := doc.Components.Schemas[name]
		props, _ := schema["properties"].(map[string]any)
		goType, known := requestTypes[name]
		bounded := map[string]bool{}
		for field, p := range props {
			if m, isMap := p.(map[string]any); isMap {
				if _, _, ok := schemaBounds(m); ok {
					bounded[field] = true
				}
			}
		}
		if !known {
			if len(bounded) > 0 {
				t.Errorf("schema %s bounds integers (%v): add the Go type that decodes it to requestTypes", name, bounded)
			}
			continue
		}
		if goType == nil {
			if len(bounded) > 0 {
				t.Errorf("schema %s bounds %v, but requestTypes says it has no integer fields", name, bounded)
			}
			continue
		}
		rt := reflect.TypeOf(goType)
		for i := 0; i < rt.NumField(); i++ {
			sf := rt.Field(i)
			field, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if _, tagged := sf.Tag.Lookup("range"); !tagged {
				if bounded[field] {
					t.Errorf("%s.%s: the document bounds it, %s.%s has no range tag", name, field, rt.Name(), sf.Name)
				}
				continue
			}
			b := httpio.FieldBounds(goType, sf.Name)
			p, _ := props[field].(map[string]any)
			lo, hi, ok := schemaBounds(p)
			switch {
			case p == nil: // the route does not take the field (a campaign's status on create)
			case !ok:
				t.Errorf("%s.%s: the range tag says %d to %d; the document states no bounds", name, field, b.Lo, b.Hi)
			case lo != b.Lo || hi != b.Hi:
				t.Errorf("%s.%s: the range tag says %d to %d; the document %v to %v", name, field, b.Lo, b.Hi, lo, hi)
			}
		}
	}
}
