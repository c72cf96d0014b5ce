package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeText is the one normalization of text answers and text quota
// values (docs/rules.md §5): surrounding and inner white space removed, letters
// upper-cased. It returns s itself, without allocating, when s is already
// normalized, so it is cheap to call on stored values.
func NormalizeText(s string) string {
	if isNormalized(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

func isNormalized(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if unicode.IsSpace(r) || unicode.ToUpper(r) != r {
					return false
				}
			}
			return true
		}
		if c == ' ' || (c >= '\t' && c <= '\r') || (c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}
