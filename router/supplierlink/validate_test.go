package supplierlink

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		link string
		ok   bool
	}{
		{"https://x.test/s?tid={ID}", true},
		{"https://x.test/s?id=", true},
		{"https://x.test/s?a={ID}&security_hash={LINK_HASH}", true},
		{"https://x.test/s?security_hash={LINK_HASH}", true},
		{"https://x.test/s?a={id}&security_hash={link_hash}", true},
		{"http://x.test:8080/{ID}/{RESPONDENT_ID}?z={ZIP_CODE}", true},
		{"https://x.test:1/", true},
		{"https://x.test:65535/", true},
		{"https://127.0.0.1/?{ID}", true},
		{"https://[2001:db8::1]:443/?{ID}", true},
		{"https://sub-1.x.test./?{ID}", true},
		{"https://x.test/s?a=1#frag", true},
		{"https://x.test/s?a={ID}&b={ID}", false},
		{"https://x.test/s?a={id}&b={ID}", false}, // one case rule: {id} is {ID}
		{"https://x.test/{LINK_HASH}", false},
		{"https://x.test/s?xsecurity_hash={LINK_HASH}", false},
		{"https://x.test/s?security_hash={LINK_HASH}&a=1", false},
		{"https://x.test/s?security_hash={LINK_HASH}#f", false},
		{"ftp://x.test/", false},
		{"x.test/s?id={ID}", false},
		{"//x.test/", false},
		{"https:///s", false},
		{"https://x.test/a b", false},
		{"https://{ID}.test/", false},
		{"https://x.test/s#{ID}", false},
		{"https://x.test/s?a={a-b}", false},
		{"https://x.test/s?a={{ID}}", false},
		{"https://x.test/s?a=}", false},
		{"https://x.test:99999/?{ID}", false},
		{"https://x.test:0/?{ID}", false},
		{"https://x.test:/?{ID}", false},
		{"https://x.test;script-src,default-src/?{ID}", false},
		{"https://user:pw@x.test/?{ID}", false},
		{"https://x%2Etest/?{ID}", false},
		{"https://-x.test/?{ID}", false},
		{"https://x_y.test/?{ID}", false},
		{"https://1.2.3/?{ID}", false},
		{"https://999.1.1.1/?{ID}", false},
		{"https://[fe80::1%25en0]/?{ID}", false},
		{"https://[127.0.0.1]/?{ID}", false},
		{"https://" + strings.Repeat("a", 64) + ".test/", false},
		{"https://x.test/" + strings.Repeat("a", MaxLen), false},
	}
	for _, c := range cases {
		if msg := Validate(c.link); (msg == "") != c.ok {
			t.Errorf("Validate(%q) = %q, want valid=%v", c.link, msg, c.ok)
		}
	}
}

// placeholderRE is the grammar read independently of cut: a brace, a name, a brace.
var placeholderRE = regexp.MustCompile(`(?i)\{[a-z0-9_]+\}`)

// FuzzSupplierLink holds Validate and Build to one grammar: whatever validates is a URL with
// the same scheme and host once built, gets the transaction id substituted exactly once, and
// keeps no placeholder (no brace at all: values are URL-encoded).
func FuzzSupplierLink(f *testing.F) {
	for _, s := range []string{
		"https://x.test/s?tid={ID}", "http://x.test/s/{ID}/{RESPONDENT_ID}", "https://x.test/s?id=",
		"https://x.test/s?a={ID}&security_hash={LINK_HASH}", "https://x.test/s?security_hash={LINK_HASH}",
		"https://x.test/s?a={ID}&b={ID}", "https://x.test/s?a={id}&b={ID}", "https://x.test/{LINK_HASH}",
		"https://x.test/s?security_hash={LINK_HASH}#f", "ftp://x.test/", "//x.test/", "https://{ID}.test/",
		"https://x.test/s?h={LINK_HASH}&security_hash={LINK_HASH}", "https://x.test/s?xsecurity_hash={LINK_HASH}",
		"", "https://x.test/s?{AGE}&{42}", "https://x.test/s?security_hash={ID}", "https://x.test/s#{ID}",
		"https://x.test:99999/?{ID}", "https://[::1]:8/p&security_hash={Id}", "https://x.test/?a={{ID}}",
	} {
		f.Add(s)
	}
	const tid = "T1d7T1d7" // unchanged by URL encoding
	f.Fuzz(func(t *testing.T, link string) {
		if Validate(link) != "" {
			return
		}
		u, err := url.Parse(placeholderRE.ReplaceAllString(link, "x"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("accepted a non-URL: %q (%v)", link, err)
		}
		with := Build(link, Values{TID: tid, RespondentID: "R", RetargetID: "{x}"}, "k")
		without := Build(link, Values{RespondentID: "R", RetargetID: "{x}"}, "k")
		if n := len(with) - len(without); n != len(tid) {
			t.Fatalf("Build(%q) = %q: the transaction id substituted %d/%d times", link, with, n, len(tid))
		}
		if strings.ContainsAny(with, "{}") {
			t.Fatalf("Build(%q) = %q left a placeholder", link, with)
		}
		out, err := url.Parse(with)
		if err != nil || out.Scheme != u.Scheme || out.Host != u.Host {
			t.Fatalf("Build(%q) = %q: not the same URL (%v)", link, with, err)
		}
	})
}
