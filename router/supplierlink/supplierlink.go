// Package supplierlink is the buyer's supplier link (docs/rules.md §6): the one placeholder
// grammar that both the validation of a campaign's supplier_link and the substitution at entry
// use, so that what the buyer API accepts is exactly what the router knows how to fill in.
//
// Grammar: a link is literal text and placeholders. A placeholder is '{', a name of one or
// more ASCII letters, digits and underscores, and '}'. Names compare case-insensitively:
// {id} is {ID}. Literal text has no '{' or '}'.
package supplierlink

import "strings"

// cut splits s at its first placeholder: the text before it, the placeholder's name (as
// written) and the text after it. found is false when s has none; before is then s. A brace
// that does not start a placeholder is part of before.
func cut(s string) (before, name, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		j := i + 1
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		if j > i+1 && j < len(s) && s[j] == '}' {
			return s[:i], s[i+1 : j], s[j+1:], true
		}
	}
	return s, "", "", false
}

func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// Is reports whether the placeholder name n is name, under the grammar's case rule.
func Is(n, name string) bool { return strings.EqualFold(n, name) }

// Count is how many placeholders of s are named name.
func Count(s, name string) int {
	n := 0
	for {
		_, p, rest, ok := cut(s)
		if !ok {
			return n
		}
		if Is(p, name) {
			n++
		}
		s = rest
	}
}

// Has reports whether s has a placeholder named name (the router asks for
// {RETARGET_IDENTIFIER}, which makes an entry look the retargeting record up).
func Has(s, name string) bool {
	for {
		_, p, rest, ok := cut(s)
		if !ok {
			return false
		}
		if Is(p, name) {
			return true
		}
		s = rest
	}
}
