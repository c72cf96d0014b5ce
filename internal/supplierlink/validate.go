package admin

import (
	"net/url"
	"strings"
)

// ValidateSupplierLink checks a campaign's supplier_link (docs/rules.md §4): an absolute http or
// https URL with a host, containing {ID} at most once, and {LINK_HASH} only as the whole
// value of a final security_hash query parameter. It returns "" when the link is valid,
// otherwise the reason, worded to follow the field name.
func ValidateSupplierLink(link string) string {
	if link == "" {
		return "is required"
	}
	if len(link) > 2048 {
		return "must be at most 2048 characters"
	}
	for i := 0; i < len(link); i++ {
		if c := link[i]; c <= ' ' || c == 0x7f {
			return "must not contain spaces or control characters"
		}
	}
	// Placeholders are not valid URL syntax everywhere ({ and } in a host), so the URL is
	// checked with each placeholder replaced by a neutral token.
	u, err := url.Parse(neutralize(link))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http(s) URL"
	}
	if strings.ContainsAny(u.Host, "{}") || strings.Contains(u.Host, placeholderToken) {
		return "must not have a placeholder in its host"
	}
	if strings.Count(link, "{ID}") > 1 {
		return "must contain {ID} at most once"
	}
	if n := strings.Count(link, "{LINK_HASH}"); n > 0 {
		if n > 1 || !strings.HasSuffix(link, "security_hash={LINK_HASH}") {
			return "must use {LINK_HASH} only as the value of a final security_hash query parameter"
		}
		q := strings.IndexByte(link, '?')
		at := len(link) - len("security_hash={LINK_HASH}")
		if q < 0 || at <= q || (link[at-1] != '?' && link[at-1] != '&') || strings.Contains(link[q:], "#") {
			return "must use {LINK_HASH} only as the value of a final security_hash query parameter"
		}
	}
	return ""
}

const placeholderToken = "zzplaceholderzz"

// neutralize replaces every placeholder ({NAME}: upper-case letters, digits, underscores)
// by a token that parses anywhere in a URL; other braces stay as they are.
func neutralize(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		if !isPlaceholderName(s[i+1 : i+j]) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(placeholderToken)
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String()
}

func isPlaceholderName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
