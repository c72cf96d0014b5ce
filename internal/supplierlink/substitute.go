package router

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/engine"
)

// LinkValues are what a supplier link's placeholders are replaced with (docs/rules.md §6).
type LinkValues struct {
	TID          string
	RespondentID string
	RetargetID   string          // the retargeting record's replacement_id or identifier
	Answers      []engine.Answer // the participant's answers (engine form: sorted, texts normalized)
}

const securityHashParam = "security_hash="

// SupplierLink builds the URL a respondent is sent to: every {PLACEHOLDER} of link replaced
// by its URL-encoded value (unknown or unanswered ones by nothing); the transaction id
// appended as id when link has no {ID} (right after a final empty "id=", else as the last
// parameter before security_hash); and {LINK_HASH}, the value of a final security_hash
// parameter, replaced by the lower-case hex HMAC-SHA1 keyed with secret of the finished link
// without that parameter and the '&' or '?' before it.
func SupplierLink(link string, v LinkValues, secret string) string {
	link, frag, hasFrag := strings.Cut(link, "#")
	hasID := containsPlaceholder(link, "ID")

	// Split off a final security_hash parameter.
	base, hashValue, hasHash := link, "", false
	if i := strings.LastIndexAny(link, "?&"); i >= 0 && strings.HasPrefix(link[i+1:], securityHashParam) {
		base, hashValue, hasHash = link[:i], link[i+1+len(securityHashParam):], true
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
		if strings.EqualFold(hashValue, "{LINK_HASH}") {
			hashValue = LinkHash(base, secret)
		} else {
			hashValue = substitute(hashValue, &v)
		}
		out = base + sep + securityHashParam + hashValue
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// LinkHash is the {LINK_HASH} of a link without its security_hash parameter.
func LinkHash(link, secret string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(link))
	return hex.EncodeToString(m.Sum(nil))
}

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

func containsPlaceholder(link, name string) bool {
	for i := 0; i < len(link); {
		open := strings.IndexByte(link[i:], '{')
		if open < 0 {
			return false
		}
		open += i
		end := strings.IndexByte(link[open:], '}')
		if end < 0 {
			return false
		}
		end += open
		if strings.EqualFold(link[open+1:end], name) {
			return true
		}
		i = end + 1
	}
	return false
}

// substitute replaces every {NAME} in s.
func substitute(s string, v *LinkValues) string {
	if strings.IndexByte(s, '{') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 64)
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			break
		}
		end += open
		b.WriteString(s[:open])
		b.WriteString(url.QueryEscape(placeholderValue(s[open+1:end], v)))
		s = s[end+1:]
	}
	b.WriteString(s)
	return b.String()
}

func placeholderValue(name string, v *LinkValues) string {
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

const trSechParam = "&tr_sech="

// SplitCallback splits a callback's request URI (path and query as received) into the part
// tr_sech signs and the tr_sech value. ok is false when there is no query, no tr_sech, or
// tr_sech is not the last parameter.
func SplitCallback(requestURI string) (signed, sech string, ok bool) {
	q := strings.IndexByte(requestURI, '?')
	i := strings.LastIndex(requestURI, trSechParam)
	if q < 0 || i < q {
		return "", "", false
	}
	sech = requestURI[i+len(trSechParam):]
	if strings.ContainsAny(sech, "&#") {
		return "", "", false
	}
	return requestURI[:i], sech, true
}

// CallbackHash is the tr_sech of a callback: lower-case hex HMAC-SHA1 keyed with the buyer's
// api_secret of publicURL + path + '?' + query up to "&tr_sech=".
func CallbackHash(publicURL, signed, secret string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(publicURL))
	m.Write([]byte(signed))
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyCallback reports whether requestURI carries a valid, final tr_sech for secret.
func VerifyCallback(publicURL, requestURI, secret string) bool {
	signed, sech, ok := SplitCallback(requestURI)
	if !ok || len(sech) != 2*sha1.Size {
		return false
	}
	want := CallbackHash(publicURL, signed, secret)
	return subtle.ConstantTimeCompare([]byte(want), []byte(sech)) == 1
}
