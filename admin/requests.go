package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/supplierlink"
)

// Limits of request values the rules leave open (docs/validation.md).
const (
	maxIDs      = 10_000 // ids in one array of one request (docs/rules.md §2)
	maxName     = 255
	maxText     = 1000
	maxInt32    = math.MaxInt32
	maxCPICents = persistence.MaxCPICents // a 10,000.00 USD bid (docs/rules.md §7, money bounds)
)

// decimal is a JSON number, or a string holding one, in USD; it is kept in cents.
type decimal struct {
	set   bool
	cents persistence.Cents
}

var floatType = reflect.TypeOf(0.0)

func (d *decimal) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = decimal{}
		return nil
	}
	text := string(b)
	if b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		text = strings.TrimSpace(text)
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || strings.Contains(text, "/") {
		return &json.UnmarshalTypeError{Value: "string", Type: floatType}
	}
	r.Mul(r, big.NewRat(100, 1))
	// round half away from zero to whole cents
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if !q.IsInt64() || q.Int64() > maxCPICents || q.Int64() < -maxCPICents {
		d.set, d.cents = true, maxCPICents+1
		return nil
	}
	d.set, d.cents = true, persistence.Cents(q.Int64())
	return nil
}

// flexString is a string that also accepts a JSON number (kept as its literal).
type flexString struct {
	set   bool
	value string
}

var stringType = reflect.TypeOf("")

func (f *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*f = flexString{}
	case b[0] == '"':
		f.set = true
		return json.Unmarshal(b, &f.value)
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		f.set, f.value = true, string(b)
	default:
		return &json.UnmarshalTypeError{Value: "value", Type: stringType}
	}
	return nil
}

// campaignBody is the body of campaign create and update. Each integer field states its
// bounds (range tags, httpio.Bounds): DecodeJSON refuses a value outside them naming them.
type campaignBody struct {
	Name              *string                     `json:"name"`
	CPI               decimal                     `json:"cpi"`
	DaysInField       *int                        `json:"days_in_field" range:"1,365"`
	Incidence         *int                        `json:"incidence" range:"1,100"`
	LengthOfInterview *int                        `json:"length_of_interview" range:"1,120"`
	CountryLanguageID *int                        `json:"country_language_id" range:"1"`
	SupplierLink      *string                     `json:"supplier_link"`
	MaxDailyCompletes persistence.Nullable[int]   `json:"max_daily_completes" range:"1"`
	ReentryInterval   persistence.Nullable[int]   `json:"reentry_interval" range:"0"`
	IsRetarget        *bool                       `json:"is_retarget"`
	SupportedDevices  *[]int                      `json:"supported_devices" range:"0,2" values:"0 (tablet), 1 (mobile) or 2 (desktop)"`
	BuyerAccountID    persistence.Nullable[int64] `json:"buyer_account_id" range:"1"`
	ProjectID         *int64                      `json:"project_id" range:"1"`
	Status            *int                        `json:"status" range:"2,5" values:"2 (active), 3 (complete) or 5 (paused)"`
	// ExcludedSupplierIDs replaces the list whole; whether each is a supplier is checked
	// when it is stored.
	ExcludedSupplierIDs *[]int64 `json:"excluded_supplier_ids" range:"1"`
}

// DecodeCampaign decodes and validates a campaign create (create true) or update body.
// What needs the database (country language, adhoc account, project, status rules) is
// checked when it is stored.
func DecodeCampaign(body []byte, create bool) (persistence.CampaignFields, error) {
	var in campaignBody
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return persistence.CampaignFields{}, err
	}
	f := persistence.CampaignFields{
		Name: in.Name, DaysInField: in.DaysInField, Incidence: in.Incidence, LengthOfInterview: in.LengthOfInterview,
		CountryLanguageID: in.CountryLanguageID, SupplierLink: in.SupplierLink, MaxDailyCompletes: in.MaxDailyCompletes,
		ReentryInterval: in.ReentryInterval, IsRetarget: in.IsRetarget, SupportedDevices: in.SupportedDevices,
		BuyerAccountID: in.BuyerAccountID, ExcludedSupplierIDs: in.ExcludedSupplierIDs,
	}
	if create {
		f.ProjectID = in.ProjectID
		for _, req := range []struct {
			field string
			set   bool
		}{{"name", in.Name != nil}, {"incidence", in.Incidence != nil}, {"length_of_interview", in.LengthOfInterview != nil},
			{"country_language_id", in.CountryLanguageID != nil}, {"supplier_link", in.SupplierLink != nil}} {
			if !req.set {
				return f, fault.Invalid(req.field, "is required")
			}
		}
	} else {
		f.Status = in.Status
	}
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		if n := utf8.RuneCountInString(name); n < 1 || n > maxName {
			return f, fault.Invalid("name", "must be 1 to %d characters", maxName)
		}
		f.Name = &name
	}
	if in.CPI.set {
		if in.CPI.cents < 0 || in.CPI.cents > maxCPICents {
			return f, fault.Invalid("cpi", "must be between 0 and 10000")
		}
		c := in.CPI.cents
		f.CPIBid = &c
	}
	if in.SupplierLink != nil {
		link := strings.TrimSpace(*in.SupplierLink)
		if msg := supplierlink.Validate(link); msg != "" {
			return f, fault.Invalid("supplier_link", "%s", msg)
		}
		f.SupplierLink = &link
	}
	if in.Status != nil && !create {
		if s := *in.Status; s != persistence.StatusActive && s != persistence.StatusComplete && s != persistence.StatusPaused {
			return f, httpio.FieldBounds(campaignBody{}, "Status").Refuse("status")
		}
	}
	return f, nil
}

// quotaBody is the body of quota create and update.
type quotaBody struct {
	Name                   persistence.Nullable[string] `json:"name"`
	NumRespondents         *int                         `json:"num_respondents" range:"1"`
	IsClickBalanced        *bool                        `json:"is_click_balanced"`
	IsGlobal               *bool                        `json:"is_global"`
	CampaignQualifications *[]qualificationBody         `json:"campaign_qualifications"`
}

// qualificationBody is one targeting criterion of a quota body. PreCodes holds integers
// (select questions, AGE) or strings (text questions): DecodeQuota parses them and refuses
// an integer outside the range tag's bounds (preCodeBounds).
type qualificationBody struct {
	QuestionID *int               `json:"question_id" range:"1"`
	PreCodes   *[]json.RawMessage `json:"pre_codes" range:"-2147483648,2147483647"`
}

// preCodeBounds are the integers a quota's pre_codes accept (whether each is an answer of
// its question is checked when it is stored).
var preCodeBounds = httpio.FieldBounds(qualificationBody{}, "PreCodes")

// DecodeQuota decodes and validates a quota create (create true) or update body. Whether
// each question and pre_code exists is checked when it is stored.
func DecodeQuota(body []byte, create bool) (persistence.QuotaFields, error) {
	var in quotaBody
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return persistence.QuotaFields{}, err
	}
	f := persistence.QuotaFields{Name: in.Name, NumRespondents: in.NumRespondents,
		IsClickBalanced: in.IsClickBalanced, IsGlobal: in.IsGlobal}
	if create && in.NumRespondents == nil {
		return f, fault.Invalid("num_respondents", "is required")
	}
	if create && in.CampaignQualifications == nil {
		return f, fault.Invalid("campaign_qualifications", "is required")
	}
	if in.Name.Valid {
		name := strings.TrimSpace(in.Name.V)
		if utf8.RuneCountInString(name) > maxName {
			return f, fault.Invalid("name", "must be at most %d characters", maxName)
		}
		f.Name.V = name
	}
	if in.CampaignQualifications == nil {
		return f, nil
	}
	quals := *in.CampaignQualifications
	if len(quals) > 100 {
		return f, fault.Invalid("campaign_qualifications", "must have at most 100 entries")
	}
	f.Qualifications = make([]persistence.QualificationInput, 0, len(quals))
	seen := map[int]bool{}
	for i, q := range quals {
		field := fmt.Sprintf("campaign_qualifications[%d]", i)
		if q.QuestionID == nil {
			return f, fault.Invalid(field+".question_id", "is required")
		}
		if seen[*q.QuestionID] {
			return f, fault.Invalid(field+".question_id", "repeats question %d", *q.QuestionID)
		}
		seen[*q.QuestionID] = true
		if q.PreCodes == nil || len(*q.PreCodes) == 0 {
			return f, fault.Invalid(field+".pre_codes", "must be a non-empty array")
		}
		if len(*q.PreCodes) > maxIDs {
			return f, fault.Invalid(field+".pre_codes", "must have at most %d values", maxIDs)
		}
		codes := make([]persistence.PreCode, len(*q.PreCodes))
		for j, raw := range *q.PreCodes {
			raw = bytes.TrimSpace(raw)
			switch {
			case len(raw) > 0 && raw[0] == '"':
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return f, fault.BadRequest("request body is not valid JSON")
				}
				codes[j] = persistence.PreCode{Text: s}
			case len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')):
				if n, err := strconv.ParseInt(string(raw), 10, 64); httpio.IsRangeError(err) || n < preCodeBounds.Lo || n > preCodeBounds.Hi {
					return f, preCodeBounds.Refuse(fmt.Sprintf("%s.pre_codes[%d]", field, j))
				}
				codes[j] = persistence.PreCode{Text: string(raw), Number: true}
			default:
				return f, fault.Invalid(fmt.Sprintf("%s.pre_codes[%d]", field, j), "must be an integer or a string")
			}
		}
		f.Qualifications = append(f.Qualifications, persistence.QualificationInput{QuestionID: *q.QuestionID, PreCodes: codes})
	}
	return f, nil
}

// retargetBody is the body of both campaign_retargets routes. Each retargeting id may be
// an object {"id", "replacement_id"} or a plain string.
type retargetBody struct {
	RetargetingType *int               `json:"retargeting_type" range:"0,3" values:"0 (transaction id), 1 (respondent id), 2 (device id) or 3 (hashed mobile ad id)"`
	RetargetingIDs  *[]json.RawMessage `json:"retargeting_ids"`
	ExpirationDate  *string            `json:"expiration_date"`
}

type retargetRequest struct {
	typ     int
	entries []persistence.RetargetEntry
	expires time.Time
}

// decodeRetargets decodes a campaign_retargets body; add says whether it adds records (and
// may carry replacement ids and an expiration date).
func decodeRetargets(body []byte, add bool, now time.Time) (retargetRequest, error) {
	var in retargetBody
	if err := httpio.DecodeJSON(body, &in); err != nil {
		return retargetRequest{}, err
	}
	var r retargetRequest
	if in.RetargetingType == nil {
		return r, fault.Invalid("retargeting_type", "is required")
	}
	r.typ = *in.RetargetingType
	if in.RetargetingIDs == nil || len(*in.RetargetingIDs) == 0 {
		return r, fault.Invalid("retargeting_ids", "must be a non-empty array")
	}
	if len(*in.RetargetingIDs) > maxIDs {
		return r, fault.Invalid("retargeting_ids", "must have at most %d ids", maxIDs)
	}
	r.entries = make([]persistence.RetargetEntry, len(*in.RetargetingIDs))
	for i, raw := range *in.RetargetingIDs {
		field := fmt.Sprintf("retargeting_ids[%d]", i)
		var e struct {
			ID            *string `json:"id"`
			ReplacementID *string `json:"replacement_id"`
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return r, fault.BadRequest("request body is not valid JSON")
			}
			e.ID = &s
		} else if len(raw) > 0 && raw[0] == '{' {
			if err := json.Unmarshal(raw, &e); err != nil {
				return r, fault.Invalid(field, "must be an object with string id and replacement_id")
			}
		} else {
			return r, fault.Invalid(field, "must be an object with a string id, or a string")
		}
		if e.ID == nil || strings.TrimSpace(*e.ID) == "" {
			return r, fault.Invalid(field+".id", "is required")
		}
		id := strings.TrimSpace(*e.ID)
		if len(id) > maxName {
			return r, fault.Invalid(field+".id", "must be at most %d characters", maxName)
		}
		if r.typ == persistence.RetargetHashedMAID && !isSHA1Hex(id) {
			return r, fault.Invalid(field+".id", "must be a hashed mobile ad id: the 40-digit hexadecimal SHA-1 of the upper-cased ad id")
		}
		if e.ReplacementID != nil {
			if !add {
				return r, fault.Invalid(field+".replacement_id", "is only accepted when adding records")
			}
			if len(*e.ReplacementID) > maxName {
				return r, fault.Invalid(field+".replacement_id", "must be at most %d characters", maxName)
			}
		}
		r.entries[i] = persistence.RetargetEntry{ID: id, ReplacementID: e.ReplacementID}
	}
	r.expires = now.Add(30 * 24 * time.Hour)
	if in.ExpirationDate != nil {
		if !add {
			return r, fault.Invalid("expiration_date", "is only accepted when adding records")
		}
		d, err := time.Parse("1-2-2006", strings.TrimSpace(*in.ExpirationDate))
		if err != nil {
			return r, fault.Invalid("expiration_date", "must be a date as month-day-year, e.g. 12-31-2026")
		}
		// The record lasts through the whole given day (UTC).
		r.expires = d.AddDate(0, 0, 1)
		if !r.expires.After(now) {
			return r, fault.Invalid("expiration_date", "must not be in the past")
		}
	}
	return r, nil
}

func isSHA1Hex(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// parsePreCodeValues parses a custom screener's pre_code_values: one pre_code or several
// separated by commas ("1", "1,2").
func parsePreCodeValues(v flexString) ([]int, error) {
	parts := strings.Split(v.value, ",")
	if len(parts) > maxIDs {
		return nil, fault.Invalid("pre_code_values", "must have at most %d pre_codes", maxIDs)
	}
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		n64, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if httpio.IsRangeError(err) {
			return nil, fault.Invalid("pre_code_values", "must hold pre_codes from 1 to %d", maxInt32)
		}
		n := int(n64)
		if err != nil || n < 1 {
			return nil, fault.Invalid("pre_code_values", "must be a pre_code or a comma-separated list of pre_codes, e.g. \"1,2\"")
		}
		out = append(out, n)
	}
	return out, nil
}

// requiredText validates a required free-text field.
func requiredText(field string, v *string, max int) (string, error) {
	if v == nil || strings.TrimSpace(*v) == "" {
		return "", fault.Invalid(field, "is required")
	}
	s := strings.TrimSpace(*v)
	if utf8.RuneCountInString(s) > max {
		return "", fault.Invalid(field, "must be at most %d characters", max)
	}
	return s, nil
}

// optionalText validates an optional free-text field.
func optionalText(field string, v *string, max int) (string, error) {
	if v == nil {
		return "", nil
	}
	s := strings.TrimSpace(*v)
	if utf8.RuneCountInString(s) > max {
		return "", fault.Invalid(field, "must be at most %d characters", max)
	}
	return s, nil
}
