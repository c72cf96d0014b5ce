package supply

import (
	"encoding/json"
	"testing"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// testCatalog is a small US catalog: AGE, GENDER, ZIP (required), HISPANIC, DEVICES_OWNED.
func testCatalog(tb testing.TB) *catalog {
	tb.Helper()
	codes := func(n int32) []persistence.CatalogAnswer {
		out := make([]persistence.CatalogAnswer, n)
		for i := range out {
			out[i] = persistence.CatalogAnswer{PreCode: int32(i + 1), OptionText: "option"}
		}
		return out
	}
	src := &persistence.Catalog{
		Countries: []persistence.Country{{ID: 1, Name: "United States", ISOCode: "US", CountryLanguageIDs: []int32{1, 2}}},
		Questions: map[int32][]persistence.CatalogQuestion{1: {
			{QuestionID: 42, CountryLanguageID: 1, Name: "AGE", QuestionText: "Age?", AnswerType: 5, Required: true},
			{QuestionID: 43, CountryLanguageID: 1, Name: "GENDER", QuestionText: "Gender?", AnswerType: 0, Required: true, Answers: codes(2)},
			{QuestionID: 45, CountryLanguageID: 1, Name: "ZIP", QuestionText: "ZIP?", AnswerType: 5, Required: true},
			{QuestionID: 47, CountryLanguageID: 1, Name: "HISPANIC", QuestionText: "Hispanic?", AnswerType: 0, Answers: codes(14)},
			{QuestionID: 110, CountryLanguageID: 1, Name: "DEVICES_OWNED", QuestionText: "Devices?", AnswerType: 1, Answers: codes(8)},
		}},
	}
	c, err := newCatalog(src)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]int32{`35`: 35, `"35"`: 35, `" 40 "`: 40, `0`: 0, `120`: 120, `35.0`: 35} {
		if got, err := parseAge(json.RawMessage(in)); err != nil || got != want {
			t.Fatalf("parseAge(%s) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{`-1`, `121`, `"abc"`, `35.5`, `true`, `[]`, `""`, `1e400`} {
		if _, err := parseAge(json.RawMessage(in)); err == nil {
			t.Fatalf("parseAge(%s) accepted", in)
		}
	}
}

// FuzzImpanelBody feeds arbitrary bodies through the whole impanel decoding and validation:
// it must never panic, and every failure is a 400, 401, 413 or 422 of the fault vocabulary.
func FuzzImpanelBody(f *testing.F) {
	cat := testCatalog(f)
	f.Add([]byte(`{"country_id":1,"ts":1700000000,"sech":"ab","profile_data":[{"question_id":42,"values":[35]},{"question_id":43,"values":[1]},{"question_id":45,"values":["94105"]}],"attributes_hash":{"a":1,"b":"x","c":true}}`))
	f.Add([]byte(`{"country_id":"1","ts":"1","sech":1}`))
	f.Add([]byte(`{"country_id":1,"ts":1,"sech":"","profile_data":[{"question_id":110,"values":[1,2,2,8]}]}`))
	f.Add([]byte(`{"country_id":1,"ts":1,"sech":"","profile_data":[null,{},[],1,"x"]}`))
	f.Add([]byte(`{"country_id":1,"ts":1,"sech":"","profile_data":{"question_id":42}}`))
	f.Add([]byte(`{"country_id":1,"ts":1,"sech":"","attributes_hash":{"x":{"y":1}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Add([]byte(`{"ts":1e3}`))
	f.Add([]byte(`{"country_id":1,"ts":1,"sech":"","profile_data":[{"question_id":45,"values":["9\u00001"]}],"attributes_hash":{"k\u0000":"v\u0000"}}`))
	f.Add([]byte("{\"country_id\":1,\"ts\":1,\"sech\":\"\",\"profile_data\":[{\"question_id\":45,\"values\":[\"\xff\"]}],\"attributes_hash\":{\"\xff\":1}}"))
	f.Add([]byte(`{"country_id":2147483648,"ts":99999999999999999999,"sech":""}`))
	f.Add([]byte(`{"country_id":1,"ts":1,"sech":"","profile_data":[{"question_id":99999999999,"values":[1e400]}],"attributes_hash":{"n":1e999999}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeImpanel(body)
		if err != nil {
			checkKind(t, err, fault.KindBadRequest, fault.KindUnauthorized, fault.KindInvalid, fault.KindTooLarge)
			return
		}
		cc, err := cat.parseCountry(req.countryID)
		if err != nil {
			checkKind(t, err, fault.KindInvalid)
			return
		}
		answers, err := cc.parseProfile(req.profile)
		if err != nil {
			checkKind(t, err, fault.KindInvalid)
			return
		}
		checkAnswers(t, cc, answers)
		for _, a := range answers {
			for _, s := range a.Texts {
				if !httpio.ValidText(s) {
					t.Fatalf("text answer %q accepted", s)
				}
			}
		}
		attrs, err := parseAttributes(req.attrs)
		if err != nil {
			checkKind(t, err, fault.KindInvalid)
		}
		for k, v := range attrs {
			if s, ok := v.(string); !httpio.ValidText(k) || ok && !httpio.ValidText(s) {
				t.Fatalf("attribute %q: %q accepted", k, v)
			}
		}
		_ = cc.requiredMissing(answers)
	})
}

// FuzzProfileValues validates arbitrary values for each kind of question: accepted values
// always satisfy the catalog.
func FuzzProfileValues(f *testing.F) {
	cat := testCatalog(f)
	cc := cat.byCountry[1]
	for _, seed := range []string{`[35]`, `["35"]`, `[1]`, `[1,2]`, `["94105"]`, `[" a b "]`, `[]`, `[null]`, `[1.5]`, `["\u0000"]`, `[99999999999]`, `[-1]`, `{}`} {
		for _, q := range []int32{42, 43, 45, 47, 110} {
			f.Add(q, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, qid int32, values []byte) {
		q := cc.questions[qid]
		if q == nil {
			return
		}
		a, err := q.parseValues("values", json.RawMessage(values))
		if err != nil {
			checkKind(t, err, fault.KindInvalid)
			return
		}
		checkAnswers(t, cc, []persistence.ProfileAnswer{a})
		// What is accepted can be stored and read back the same.
		raw, err := profileRoundTrip(a)
		if err != nil {
			t.Fatalf("stored form of %+v: %v", a, err)
		}
		_ = raw
	})
}

func profileRoundTrip(a persistence.ProfileAnswer) ([]byte, error) {
	if a.Texts != nil {
		return json.Marshal(a.Texts)
	}
	return json.Marshal(a.Codes)
}

func checkKind(t *testing.T, err error, kinds ...fault.Kind) {
	t.Helper()
	k := fault.KindOf(err)
	for _, want := range kinds {
		if k == want {
			if f := fault.As(err); f.Kind == fault.KindInvalid && f.Field == "" {
				t.Fatalf("422 without a field: %v", err)
			}
			return
		}
	}
	t.Fatalf("error %v of kind %d", err, k)
}

func checkAnswers(t *testing.T, cc *countryCatalog, answers []persistence.ProfileAnswer) {
	t.Helper()
	seen := map[int32]bool{}
	for _, a := range answers {
		q := cc.questions[a.QuestionID]
		if q == nil || seen[a.QuestionID] {
			t.Fatalf("answer to unknown or repeated question %d", a.QuestionID)
		}
		seen[a.QuestionID] = true
		switch {
		case a.QuestionID == 42:
			if len(a.Codes) != 1 || a.Codes[0] < 0 || a.Codes[0] > maxAge {
				t.Fatalf("age %+v", a)
			}
		case q.answerType == answerText:
			if len(a.Texts) != 1 || a.Texts[0] == "" || len(a.Texts[0]) > maxTextAnswer {
				t.Fatalf("text %+v", a)
			}
		default:
			if len(a.Codes) == 0 || (q.answerType == answerSingle && len(a.Codes) != 1) {
				t.Fatalf("codes %+v", a)
			}
			for _, c := range a.Codes {
				if !q.preCodes[c] {
					t.Fatalf("pre_code %d not in question %d", c, q.id)
				}
			}
		}
	}
}
