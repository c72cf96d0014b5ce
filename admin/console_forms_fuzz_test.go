package admin

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
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
