package supplierlink

import (
	"crypto/sha1"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/keyedmac"
)

// Values are what a supplier link's placeholders are replaced with (docs/rules.md §6).
type Values struct {
	TID          string
	RespondentID string
	RetargetID   string          // the retargeting record's replacement_id or identifier
	Answers      []engine.Answer // the participant's answers (engine form: sorted, texts normalized)
}

// Build builds the URL a respondent is sent to: every placeholder of link replaced by its
// URL-encoded value (unknown or unanswered ones by nothing); the transaction id
// appended as id when link has no {ID} (right after a final empty "id=", else as the last
// parameter before security_hash); and {LINK_HASH}, the value of a final security_hash
// parameter, replaced by the lower-case hex HMAC-SHA1 keyed with secret of the finished link
// without that parameter and the '&' or '?' before it. The fragment is kept as it is. A link
// Validate accepts comes out with {ID} substituted exactly once and no placeholder left.
func Build(link string, v Values, secret string) string {
	link, frag, hasFrag := strings.Cut(link, "#")
	hasID := Has(link, "ID")

	// Split off a final security_hash parameter.
	base, hashValue, hasHash := link, "", false
	if i := strings.LastIndexAny(link, "?&"); i >= 0 && strings.HasPrefix(link[i+1:], hashParam) {
		base, hashValue, hasHash = link[:i], link[i+1+len(hashParam):], true
	}
	base = substitute(base, &v)
	if !hasID {
		base = appendID(base, v.TID)
	}
	out := base
	if hasHash {
		sep := "?"
		if strings.IndexByte(base, '?') >= 0 {
			sep = "&"
		}
		if isPlaceholder(hashValue, "LINK_HASH") {
			hashValue = Hash(base, secret)
		} else {
			hashValue = substitute(hashValue, &v)
		}
		out = base + sep + hashParam + hashValue
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// Hash is the {LINK_HASH} of a link without its security_hash parameter.
func Hash(link, secret string) string { return linkMAC.Hex(secret, link) }

// linkMAC signs supplier links: HMAC-SHA1 under each buyer's secret.
var linkMAC = keyedmac.New(sha1.New)

// appendID adds the transaction id to link: right after a query that ends in an empty id
// parameter ("?id=" or "&id="), else as a new last parameter.
func appendID(link, tid string) string {
	q := strings.IndexByte(link, '?')
	switch {
	case q < 0:
		return link + "?id=" + url.QueryEscape(tid)
	case strings.HasSuffix(link, "?id=") || strings.HasSuffix(link, "&id="):
		return link + url.QueryEscape(tid)
	case q == len(link)-1 || strings.HasSuffix(link, "&"):
		return link + "id=" + url.QueryEscape(tid)
	default:
		return link + "&id=" + url.QueryEscape(tid)
	}
}

// substitute replaces every placeholder of s by its URL-encoded value.
func substitute(s string, v *Values) string {
	before, name, rest, ok := cut(s)
	if !ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 64)
	for ok {
		b.WriteString(before)
		b.WriteString(url.QueryEscape(placeholderValue(name, v)))
		before, name, rest, ok = cut(rest)
	}
	b.WriteString(before)
	return b.String()
}

func placeholderValue(name string, v *Values) string {
	switch strings.ToUpper(name) {
	case "ID":
		return v.TID
	case "RESPONDENT_ID":
		return v.RespondentID
	case "RETARGET_IDENTIFIER":
		return v.RetargetID
	case "AGE":
		return answerText(v.Answers, engine.QuestionAge)
	case "GENDER":
		a := answer(v.Answers, engine.QuestionGender)
		if a == nil || len(a.Codes) == 0 {
			return ""
		}
		switch a.Codes[0] {
		case 1:
			return "M"
		case 2:
			return "F"
		}
		return ""
	case "ZIP_CODE":
		return answerText(v.Answers, engine.QuestionZip)
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id <= 0 {
		return "" // unknown placeholder, {LINK_HASH} anywhere but a final security_hash
	}
	return answerText(v.Answers, int32(id))
}

func answer(as []engine.Answer, q int32) *engine.Answer {
	for i := range as {
		if as[i].QuestionID == q {
			return &as[i]
		}
	}
	return nil
}

// answerText renders an answer: its text, or its codes joined by commas.
func answerText(as []engine.Answer, q int32) string {
	var b []byte
	for i := range as {
		a := &as[i]
		if a.QuestionID != q {
			continue
		}
		if a.Text != "" {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = append(b, a.Text...)
		}
		for _, c := range a.Codes {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(c), 10)
		}
	}
	return string(b)
}
