package admin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
)

// postCtx is a request posting form.
func postCtx(form url.Values) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
	ctx.Request.SetBodyString(form.Encode())
	return ctx
}

// FuzzConsoleFormBody: whatever a browser posts, the campaign and quota forms turn it into
// a JSON object that the API's own decoders accept or refuse with a fault naming a field
// (never a malformed body), and an age range into at most one age more than a quota accepts.
func FuzzConsoleFormBody(f *testing.F) {
	for _, s := range [][6]string{
		{"Commuters", "40", "2.50", "", "18", "34"},
		{"", "0", "-1", "1", "", ""},
		{"x\x00", "1e3", "abc", "9", "-5", "999999999"},
		{"\xff", "-0", "1.005", "x", "40", "18"},
		{"a", "2147483648", "", "0,1", "0", "120"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], true)
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], false)
	}
	f.Fuzz(func(t *testing.T, name, number, cpi, pick, from, to string, create bool) {
		form := url.Values{"name": {name}, "incidence": {number}, "length_of_interview": {number}, "cpi": {cpi},
			"max_daily_completes": {number}, "supplier_link": {name}, "country_language_id": {pick},
			"supported_devices": {pick, number}, "excluded_supplier_ids": {pick}}
		cf := &campaignForm{Fields: append([]formField(nil), campaignFields...)}
		body := cf.body(postCtx(form), create)
		if !json.Valid(body) || body[0] != '{' {
			t.Fatalf("campaign body %q", body)
		}
		if _, err := DecodeCampaign(body, create); err != nil {
			if fe := fault.As(err); fe == nil || fe.Kind != fault.KindInvalid || fe.Field == "" {
				t.Fatalf("campaign body %s refused without a field: %v", body, err)
			}
		}

		if n := len(ageRange(from, to)); n > maxIDs+1 {
			t.Fatalf("age range %q–%q has %d ages", from, to, n)
		}
		qf := &quotaForm{Name: name, NumRespondents: number, Questions: []targetQuestion{
			{ID: 42, Age: true, From: from, To: to}, {ID: 45, List: true, Values: name},
			{ID: 43, Answers: []choice{{Value: pick, Checked: true}}}}}
		qb, index := qf.body(create)
		if !json.Valid(qb) || qb[0] != '{' {
			t.Fatalf("quota body %q", qb)
		}
		if len(index) > len(qf.Questions) {
			t.Fatalf("%d qualifications of %d questions", len(index), len(qf.Questions))
		}
		if _, err := DecodeQuota(qb, create); err != nil {
			if fe := fault.As(err); fe == nil || fe.Kind != fault.KindInvalid || fe.Field == "" {
				t.Fatalf("quota body %s refused without a field: %v", qb, err)
			}
		}
	})
}

// FuzzConsoleScreenerForm: whatever a browser posts, the screener form's bodies are JSON
// objects that carry the question's and answers' text as typed (valid UTF-8), and the
// attachment's pre_code_values parse, by the API's own parser, back to the qualifying
// answers' pre_codes.
func FuzzConsoleScreenerForm(f *testing.F) {
	f.Add("Own a car?", "", "0", "Yes", "No", true, false)
	f.Add(" ", "CUSTOM", "2", "", "  ", false, true)
	f.Add("x\x00\"", "\xff", "1e3", "a,b", "\\", true, true)
	f.Fuzz(func(t *testing.T, text, name, kind, a1, a2 string, q1, q2 bool) {
		form := url.Values{"question_text": {text}, "name": {name}, "answer_type": {kind}, "answer-1": {a1}, "answer-2": {a2}}
		if q1 {
			form.Add("qualifies", "1")
		}
		if q2 {
			form.Add("qualifies", "2")
		}
		sf := &screenerForm{}
		for n := 1; n <= 2; n++ {
			sf.Answers = append(sf.Answers, screenerAnswer{N: n, InputID: fmt.Sprintf("answer-%d", n), QualifyVal: strconv.Itoa(n)})
		}
		sf.fill(postCtx(form))
		var q struct {
			QuestionText string `json:"question_text"`
		}
		body := sf.questionBody()
		if err := json.Unmarshal(body, &q); err != nil || body[0] != '{' {
			t.Fatalf("question body %q: %v", body, err)
		}
		if utf8.ValidString(text) && q.QuestionText != text {
			t.Fatalf("question text %q became %q", text, q.QuestionText)
		}
		var codes []int
		for i, r := range sf.Answers {
			b, ok := r.body()
			if !ok {
				if strings.TrimSpace(r.Text) != "" || r.Qualifies {
					t.Fatalf("row %d (%q) dropped", r.N, r.Text)
				}
				continue
			}
			var a struct {
				OptionText string `json:"option_text"`
			}
			if err := json.Unmarshal(b, &a); err != nil || utf8.ValidString(r.Text) && a.OptionText != r.Text {
				t.Fatalf("answer body %q of %q: %v", b, r.Text, err)
			}
			if r.Qualifies {
				codes = append(codes, i+1)
			}
		}
		var in customQualificationBody
		if err := httpio.DecodeJSON(attachBody(7, codes), &in); err != nil {
			t.Fatal(err)
		}
		if got, err := parsePreCodeValues(in.PreCodeValues); len(codes) > 0 && (err != nil || fmt.Sprint(got) != fmt.Sprint(codes)) {
			t.Fatalf("pre_code_values %v parse to %v (%v)", codes, got, err)
		}
		if in.PreCodeValues.set != (len(codes) > 0) {
			t.Fatalf("pre_code_values set %v for %v", in.PreCodeValues.set, codes)
		}
	})
}
