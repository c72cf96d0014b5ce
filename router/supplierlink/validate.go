package supplierlink

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// MaxLen is the longest supplier link accepted.
const MaxLen = 2048

const hashParam = "security_hash="

// Validate checks a campaign's supplier_link (docs/rules.md §4, §6): an absolute http or https
// URL, parsed by net/url, without user information, whose host is a DNS name or an IP
// literal and whose port, if any, is 1–65535; placeholders only in its path and query, {ID}
// at most once, and {LINK_HASH} only as the whole value of a final security_hash query
// parameter. It returns "" when the link is valid, otherwise the reason, worded to follow the
// field name. Whatever it accepts, Build substitutes completely.
func Validate(link string) string {
	if link == "" {
		return "is required"
	}
	if len(link) > MaxLen {
		return "must be at most 2048 characters"
	}
	for i := 0; i < len(link); i++ {
		if c := link[i]; c <= ' ' || c == 0x7f {
			return "must not contain spaces or control characters"
		}
	}
	// Placeholders are checked first; the URL is then parsed with each replaced by a letter,
	// which is valid wherever a placeholder may stand.
	var plain strings.Builder
	for s := link; ; {
		before, _, rest, ok := cut(s)
		if strings.ContainsAny(before, "{}") {
			return "must use { and } only in placeholders such as {ID}"
		}
		plain.WriteString(before)
		if !ok {
			break
		}
		plain.WriteByte('p')
		s = rest
	}
	scheme, rest, ok := strings.Cut(link, ":")
	if !ok || !strings.HasPrefix(rest, "//") {
		return "must be an absolute http(s) URL"
	}
	authority := rest[2:]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if strings.Contains(scheme, "{") || strings.Contains(authority, "{") {
		return "must not have a placeholder in its scheme or host"
	}
	if _, frag, ok := strings.Cut(link, "#"); ok && strings.Contains(frag, "{") {
		return "must not have a placeholder in its fragment"
	}
	u, err := url.Parse(plain.String())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Host == "" {
		return "must be an absolute http(s) URL"
	}
	if u.User != nil {
		return "must not contain user information"
	}
	if u.Host != authority || !validHost(u.Hostname(), strings.HasPrefix(u.Host, "[")) {
		return "must have a valid host name or IP address"
	}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "must have a port between 1 and 65535"
		}
	}
	if Count(link, "ID") > 1 {
		return "must contain {ID} at most once"
	}
	if n := Count(link, "LINK_HASH"); n > 0 {
		i, q := strings.LastIndexAny(link, "?&"), strings.IndexByte(link, '?')
		if n > 1 || q < 0 || i < q || !strings.HasPrefix(link[i+1:], hashParam) ||
			!isPlaceholder(link[i+1+len(hashParam):], "LINK_HASH") || strings.Contains(link, "#") {
			return "must use {LINK_HASH} only as the value of a final security_hash query parameter"
		}
	}
	return ""
}

// isPlaceholder reports whether s is exactly one placeholder named name.
func isPlaceholder(s, name string) bool {
	before, n, after, ok := cut(s)
	return ok && before == "" && after == "" && Is(n, name)
}

// validHost reports whether h (a URL's host without port or brackets) is an IPv6 literal
// (bracketed, no zone), a dotted-quad IPv4 address, or a DNS name: dot-separated labels of
// 1–63 letters, digits and hyphens, not starting or ending with a hyphen, 253 characters at
// most (one final dot allowed), the last label not all digits (it would be a malformed
// address).
func validHost(h string, bracketed bool) bool {
	if bracketed {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Is6() && a.Zone() == ""
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Is4()
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	allDigits := false
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		allDigits = true
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-':
				allDigits = false
			default:
				return false
			}
		}
	}
	return !allDigits
}
