package admin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/admin"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/router/supplierlink"
)

// decodeKinds are the only outcomes a body decoder may have besides success.
func checkDecodeErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	switch fault.KindOf(err) {
	case fault.KindBadRequest, fault.KindInvalid, fault.KindTooLarge:
	default:
		t.Fatalf("unexpected error kind %v: %v", fault.KindOf(err), err)
	}
	if f := fault.As(err); f.Kind == fault.KindInvalid && (f.Field == "" || !strings.HasPrefix(f.Message, f.Field+" ")) {
		t.Fatalf("422 without a named field: %+v", f)
	}
}

func FuzzDecodeCampaign(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","incidence":40,"length_of_interview":12,"country_language_id":1,"supplier_link":"https://x.test/?id={ID}"}`,
		`{"name":"a","incidence":40,"length_of_interview":12,"country_language_id":1,"supplier_link":"https://x.test/?id={ID}&security_hash={LINK_HASH}","cpi":"1.005","reentry_interval":null,"max_daily_completes":3,"supported_devices":[0,1,2],"buyer_account_id":null,"project_id":4}`,
		`{"cpi":1e400}`, `{"cpi":"-0.004"}`, `{"incidence":1e3}`, `{"status":2}`, `[]`, `{"name":null}`, ``, `{"supported_devices":[9]}`,
		`{"reentry_interval":"5"}`, `{"name":"\u0000"}`, "{\"name\":\"\xff\"}", `{"incidence":2147483648}`,
		`{"max_daily_completes":99999999999999999999}`, `{"supported_devices":[1,-2147483649]}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, create bool) {
		c, err := admin.DecodeCampaign(body, create)
		checkDecodeErr(t, err)
		if err != nil {
			return
		}
		if create && (c.Name == nil || c.Incidence == nil || c.LengthOfInterview == nil || c.CountryLanguageID == nil || c.SupplierLink == nil) {
			t.Fatalf("create accepted without a required field: %s", body)
		}
		if c.Name != nil && !httpio.ValidText(*c.Name) || c.SupplierLink != nil && !httpio.ValidText(*c.SupplierLink) {
			t.Fatalf("invalid text accepted: %s", body)
		}
		if c.Incidence != nil && (*c.Incidence < 1 || *c.Incidence > 100) {
			t.Fatalf("incidence %d accepted", *c.Incidence)
		}
		if c.LengthOfInterview != nil && (*c.LengthOfInterview < 1 || *c.LengthOfInterview > 120) {
			t.Fatalf("loi %d accepted", *c.LengthOfInterview)
		}
		if c.CPIBid != nil && *c.CPIBid < 0 {
			t.Fatalf("negative cpi accepted")
		}
		if c.SupplierLink != nil && supplierlink.Validate(*c.SupplierLink) != "" {
			t.Fatalf("invalid link accepted: %q", *c.SupplierLink)
		}
		if c.MaxDailyCompletes.Valid && c.MaxDailyCompletes.V < 1 || c.ReentryInterval.Valid && c.ReentryInterval.V < 0 {
			t.Fatalf("bounds: %+v", c)
		}
		if c.Status != nil && *c.Status != 2 && *c.Status != 3 && *c.Status != 5 {
			t.Fatalf("status %d accepted", *c.Status)
		}
		if c.DaysInField != nil && (*c.DaysInField < 1 || *c.DaysInField > 365) || c.CountryLanguageID != nil && *c.CountryLanguageID < 1 {
			t.Fatalf("bounds: %+v", c)
		}
		if c.SupportedDevices != nil && slices.ContainsFunc(*c.SupportedDevices, func(d int) bool { return d < 0 || d > 2 }) {
			t.Fatalf("devices %v accepted", *c.SupportedDevices)
		}
	})
}

func FuzzDecodeQuota(f *testing.F) {
	for _, s := range []string{
		`{"num_respondents":10,"campaign_qualifications":[{"question_id":43,"pre_codes":[1,2]},{"question_id":45,"pre_codes":["94105"]}]}`,
		`{"num_respondents":10,"name":null,"is_global":true,"campaign_qualifications":[]}`,
		`{"num_respondents":0}`, `{"campaign_qualifications":[{"question_id":1,"pre_codes":[null]}]}`,
		`{"campaign_qualifications":[{"question_id":1,"pre_codes":[{"a":1}]}]}`, `{"campaign_qualifications":[{}]}`, `{`,
		`{"num_respondents":2147483648}`, `{"name":"\u0000","campaign_qualifications":[{"question_id":45,"pre_codes":["\u0000",99999999999]}]}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, create bool) {
		q, err := admin.DecodeQuota(body, create)
		checkDecodeErr(t, err)
		if err != nil {
			return
		}
		if create && q.NumRespondents == nil {
			t.Fatal("create accepted without num_respondents")
		}
		if q.NumRespondents != nil && *q.NumRespondents < 1 {
			t.Fatalf("num_respondents %d accepted", *q.NumRespondents)
		}
		if q.Name.Valid && !httpio.ValidText(q.Name.V) {
			t.Fatalf("invalid name accepted: %s", body)
		}
		seen := map[int]bool{}
		for _, qq := range q.Qualifications {
			for _, pc := range qq.PreCodes {
				if !httpio.ValidText(pc.Text) {
					t.Fatalf("invalid pre_code accepted: %s", body)
				}
			}
			if len(qq.PreCodes) == 0 || seen[qq.QuestionID] {
				t.Fatalf("qualification accepted: %+v", qq)
			}
			seen[qq.QuestionID] = true
		}
	})
}
