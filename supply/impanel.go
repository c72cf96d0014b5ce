package supply

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply/partners"
)

// Limits of impanel input.
const (
	maxIdentifier  = 255 // bytes of X-User-Identifier and X-Device-Identifier
	maxTextAnswer  = 255 // bytes of one text answer
	maxAttributes  = 100 // keys of attributes_hash
	maxAttrKey     = 100 // bytes of one attributes_hash key
	maxAttrString  = 1000
	tsWindow       = 300 // seconds |ts - now| may reach (docs/rules.md §9)
	maxAge         = 120
	maxProfileSize = 500 // entries of profile_data
	impanelTimeout = 10 * time.Second
)

// impanelBody is the impanel request before validation. Every field stays raw so that
// errors can name exactly the field at fault.
type impanelBody struct {
	CountryID   json.RawMessage `json:"country_id"`
	ProfileData json.RawMessage `json:"profile_data"`
	TS          json.RawMessage `json:"ts"`
	Sech        json.RawMessage `json:"sech"`
	Attributes  json.RawMessage `json:"attributes_hash"`
}

// impanelRequest is a decoded impanel body whose credentials are still to be checked.
type impanelRequest struct {
	ts        int64
	sech      string
	countryID json.RawMessage
	profile   json.RawMessage
	attrs     json.RawMessage
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decodeImpanel parses the body: 400 for a body that is not a JSON object, 401 for missing
// or malformed ts and sech (they are the request's credentials), 413 over 1 MiB.
func decodeImpanel(body []byte) (impanelRequest, error) {
	var b impanelBody
	if err := httpio.DecodeJSON(body, &b); err != nil {
		return impanelRequest{}, err
	}
	r := impanelRequest{countryID: b.CountryID, profile: b.ProfileData, attrs: b.Attributes}
	if isNull(b.TS) {
		return r, fault.Unauthorized("ts is required")
	}
	ts, err := strconv.ParseInt(string(b.TS), 10, 64)
	if httpio.IsRangeError(err) {
		return r, fault.Unauthorized("ts is out of range")
	}
	if err != nil {
		return r, fault.Unauthorized("ts must be an integer unix timestamp")
	}
	r.ts = ts
	if isNull(b.Sech) {
		return r, fault.Unauthorized("sech is required")
	}
	if err := json.Unmarshal(b.Sech, &r.sech); err != nil {
		return r, fault.Unauthorized("sech must be a string")
	}
	return r, nil
}

// Sech returns the security hash of an impanel: lower-case hex HMAC-SHA256, keyed with the
// publisher's api_secret, of "<user_identifier>:<ts>".
func Sech(secret, user string, ts int64) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(user))
	m.Write([]byte{':'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	return hex.EncodeToString(m.Sum(nil))
}

// checkSech verifies ts and sech in constant time.
func checkSech(secret []byte, user []byte, ts int64, sech string, now int64) error {
	if d := ts - now; d > tsWindow || d < -tsWindow {
		return fault.Unauthorized("ts is more than 300 seconds away from the server's clock")
	}
	got, err := hex.DecodeString(sech)
	if err != nil || len(got) != sha256.Size {
		return fault.Unauthorized("invalid security hash (sech)")
	}
	m := hmac.New(sha256.New, secret)
	m.Write(user)
	m.Write([]byte{':'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	if !hmac.Equal(m.Sum(nil), got) {
		return fault.Unauthorized("invalid security hash (sech)")
	}
	return nil
}

// parseCountry validates country_id against the catalog.
func (c *catalog) parseCountry(raw json.RawMessage) (*countryCatalog, error) {
	if isNull(raw) {
		return nil, fault.Invalid("country_id", "is required")
	}
	id, err := strconv.ParseInt(string(raw), 10, 32)
	if httpio.IsRangeError(err) {
		return nil, fault.Invalid("country_id", "%s", httpio.OutOfRange)
	}
	if err != nil {
		return nil, fault.Invalid("country_id", "must be an integer")
	}
	cc := c.byCountry[int32(id)]
	if cc == nil {
		return nil, fault.Invalid("country_id", "is not a supported country (see /countries)")
	}
	return cc, nil
}

type rawEntry struct {
	QuestionID json.RawMessage `json:"question_id"`
	Values     json.RawMessage `json:"values"`
}

// parseProfile validates profile_data against the country's catalog (docs/rules.md §9): select
// questions take integer pre_codes of the question (exactly one for single select), text
// questions one string, AGE a number or numeric string 0–120. Errors are 422s naming the
// field, e.g. profile_data[2].values[0].
func (cc *countryCatalog) parseProfile(raw json.RawMessage) ([]persistence.ProfileAnswer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fault.Invalid("profile_data", "must be an array")
	}
	if len(entries) > maxProfileSize {
		return nil, fault.Invalid("profile_data", "has more than %d entries", maxProfileSize)
	}
	out := make([]persistence.ProfileAnswer, 0, len(entries))
	for i, er := range entries {
		field := "profile_data[" + strconv.Itoa(i) + "]"
		var e rawEntry
		if len(er) == 0 || er[0] != '{' || json.Unmarshal(er, &e) != nil {
			return nil, fault.Invalid(field, "must be an object with question_id and values")
		}
		if isNull(e.QuestionID) {
			return nil, fault.Invalid(field+".question_id", "is required")
		}
		qid, err := strconv.ParseInt(string(e.QuestionID), 10, 32)
		if httpio.IsRangeError(err) {
			return nil, fault.Invalid(field+".question_id", "%s", httpio.OutOfRange)
		}
		if err != nil {
			return nil, fault.Invalid(field+".question_id", "must be an integer")
		}
		q := cc.questions[int32(qid)]
		if q == nil {
			return nil, fault.Invalid(field+".question_id", "%d is not a qualification of country %d", qid, cc.id)
		}
		if slices.ContainsFunc(out, func(a persistence.ProfileAnswer) bool { return a.QuestionID == q.id }) {
			return nil, fault.Invalid(field+".question_id", "%d is answered twice", qid)
		}
		a, err := q.parseValues(field+".values", e.Values)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (q *question) parseValues(field string, raw json.RawMessage) (persistence.ProfileAnswer, error) {
	a := persistence.ProfileAnswer{QuestionID: q.id}
	if isNull(raw) {
		return a, fault.Invalid(field, "is required")
	}
	var vals []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &vals) != nil {
		return a, fault.Invalid(field, "must be an array")
	}
	if len(vals) == 0 {
		return a, fault.Invalid(field, "must not be empty")
	}
	if q.answerType != answerMulti && len(vals) != 1 {
		return a, fault.Invalid(field, "must hold exactly one value for question %d (%s)", q.id, q.name)
	}
	if len(vals) > len(q.preCodes) && q.answerType == answerMulti {
		return a, fault.Invalid(field, "has more values than question %d has answers", q.id)
	}
	for j, v := range vals {
		vf := field + "[" + strconv.Itoa(j) + "]"
		switch {
		case q.id == engine.QuestionAge:
			age, err := parseAge(v)
			if err != nil {
				return a, fault.Invalid(vf, "%s", err.Error())
			}
			a.Codes = []int32{age}
		case q.answerType == answerText:
			var s string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
				return a, fault.Invalid(vf, "must be a string")
			}
			s = strings.TrimSpace(s)
			if s == "" {
				return a, fault.Invalid(vf, "must not be empty")
			}
			if len(s) > maxTextAnswer || !httpio.ValidText(s) { // the hosted profiler's answers come here too
				return a, fault.Invalid(vf, "must be valid text of at most %d bytes", maxTextAnswer)
			}
			a.Texts = []string{s}
		default:
			code, err := strconv.ParseInt(string(v), 10, 32)
			if httpio.IsRangeError(err) {
				return a, fault.Invalid(vf, "%s", httpio.OutOfRange)
			}
			if err != nil {
				return a, fault.Invalid(vf, "must be an integer pre_code")
			}
			if !q.preCodes[int32(code)] {
				return a, fault.Invalid(vf, "pre_code %d is not an answer of question %d (%s)", code, q.id, q.name)
			}
			if !slices.Contains(a.Codes, int32(code)) {
				a.Codes = append(a.Codes, int32(code))
			}
		}
	}
	slices.Sort(a.Codes)
	return a, nil
}

// parseAge takes a JSON integer or a string holding one, 0–120.
func parseAge(v json.RawMessage) (int32, error) {
	text := string(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, fmt.Errorf("must be a number or a numeric string")
		}
		text = strings.TrimSpace(s)
	}
	n, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		// Accept an integral JSON number written as 35.0.
		f, ferr := strconv.ParseFloat(text, 64)
		if httpio.IsRangeError(err) || httpio.IsRangeError(ferr) || (ferr == nil && (f > math.MaxInt32 || f < math.MinInt32)) {
			return 0, fmt.Errorf("%s: must be an age between 0 and %d", httpio.OutOfRange, maxAge)
		}
		if ferr != nil || f != float64(int64(f)) {
			return 0, fmt.Errorf("must be a whole number of years")
		}
		n = int64(f)
	}
	if n < 0 || n > maxAge {
		return 0, fmt.Errorf("must be an age between 0 and %d", maxAge)
	}
	return int32(n), nil
}

// parseAttributes validates attributes_hash: an object whose values are strings, numbers or
// booleans. nil means none was sent.
func parseAttributes(raw json.RawMessage) (map[string]any, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fault.Invalid("attributes_hash", "must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fault.Invalid("attributes_hash", "must be an object")
	}
	if len(m) > maxAttributes {
		return nil, fault.Invalid("attributes_hash", "has more than %d keys", maxAttributes)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := "attributes_hash." + k
		if k == "" || len(k) > maxAttrKey {
			return nil, fault.Invalid("attributes_hash", "keys must be 1 to %d bytes", maxAttrKey)
		}
		switch v := m[k].(type) {
		case string:
			if len(v) > maxAttrString {
				return nil, fault.Invalid(field, "must be at most %d bytes", maxAttrString)
			}
		case json.Number:
			// PostgreSQL's numeric (in jsonb) refuses what overflows it; so does float64.
			if f, err := v.Float64(); err != nil || math.IsInf(f, 0) {
				return nil, fault.Invalid(field, "%s", httpio.OutOfRange)
			}
		case bool:
		default:
			return nil, fault.Invalid(field, "must be a string, a number or a boolean")
		}
	}
	return m, nil
}

// requiredMissing returns the first required question of the country that answers lacks.
func (cc *countryCatalog) requiredMissing(answers []persistence.ProfileAnswer) error {
	for _, q := range cc.required {
		if !slices.ContainsFunc(answers, func(a persistence.ProfileAnswer) bool { return a.QuestionID == q.id }) {
			return fault.Invalid("profile_data", "is missing required question %d (%s) on the first impanel", q.id, q.name)
		}
	}
	return nil
}

func identifierHeader(ctx *fasthttp.RequestCtx, name string, required bool) ([]byte, error) {
	v := ctx.Request.Header.Peek(name)
	if len(v) == 0 {
		if required {
			return nil, fault.BadRequest("%s header is required", name)
		}
		return nil, nil
	}
	if len(v) > maxIdentifier || !httpio.ValidTextBytes(v) {
		return nil, fault.BadRequest("%s header must be valid text of at most %d bytes", name, maxIdentifier)
	}
	return v, nil
}

var successBody = []byte(`{"success":true}`)

// impanel answers POST /players/impanel.
func (a *API) impanel(ctx *fasthttp.RequestCtx) {
	if err := a.doImpanel(ctx); err != nil {
		a.fail(ctx, err)
		return
	}
	writeRaw(ctx, successBody)
}

func (a *API) doImpanel(ctx *fasthttp.RequestCtx) error {
	pub, err := a.authenticate(ctx)
	if err != nil {
		return err
	}
	user, err := identifierHeader(ctx, "X-User-Identifier", true)
	if err != nil {
		return err
	}
	device, err := identifierHeader(ctx, "X-Device-Identifier", false)
	if err != nil {
		return err
	}
	req, err := decodeImpanel(ctx.PostBody())
	if err != nil {
		return err
	}
	if err := checkSech(pub.Secret, user, req.ts, req.sech, a.now()); err != nil {
		return err
	}
	cc, err := a.catalog.parseCountry(req.countryID)
	if err != nil {
		return err
	}
	answers, err := cc.parseProfile(req.profile)
	if err != nil {
		return err
	}
	attrs, err := parseAttributes(req.attrs)
	if err != nil {
		return err
	}
	return a.storeImpanel(pub, user, device, cc, answers, attrs)
}

// storeImpanel impanels a participant whose answers are validated against cc: write-through
// to PostgreSQL (which NOTIFYs the other processes), the panel update and the drop of the
// user's cached offers. POST /players/impanel and the hosted profiler both end here.
func (a *API) storeImpanel(pub *partners.Publisher, user, device []byte, cc *countryCatalog, answers []persistence.ProfileAnswer, attrs map[string]any) error {
	in := persistence.Impanel{PublisherID: pub.ID, User: string(user), CountryID: cc.id, Profile: answers, Attributes: attrs}
	dbctx, cancel := httpio.DBContext(impanelTimeout)
	defer cancel()
	stored, err := a.participants.ImpanelParticipant(dbctx, in, a.origin, func() error { return cc.requiredMissing(answers) })
	if err != nil {
		return err
	}
	prof := stored.Participant
	prof.DeviceID = string(device)
	if _, err := a.panel.Upsert(pub.ID, in.User, prof, stored.LastActive); err != nil {
		return fault.Internal(err)
	}
	a.cache.dropUser(pub.ID, user, device)
	a.quality.AfterImpanel(pub.ID, user, device, stored.ID, cc.id, answers) // profile rules (supply/quality)
	return nil
}
