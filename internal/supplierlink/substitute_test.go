package router

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// hmacSHA1 is computed here independently of the code under test.
func hmacSHA1(key, msg string) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSupplierLink(t *testing.T) {
	const secret = "s3cret"
	answers := []engine.Answer{
		{QuestionID: engine.QuestionAge, Codes: []int32{34}},
		{QuestionID: engine.QuestionGender, Codes: []int32{2}},
		{QuestionID: engine.QuestionZip, Text: "SW1A1AA"},
		{QuestionID: 61, Codes: []int32{3, 5}},
		{QuestionID: 70, Text: "A&B C"},
	}
	v := LinkValues{TID: "abc123", RespondentID: "R1X", RetargetID: "rt 1", Answers: answers}
	cases := []struct {
		name, link, want string
	}{
		{"id placeholder", "https://x.test/s?tid={ID}", "https://x.test/s?tid=abc123"},
		{"query ends in id=", "https://x.test/s/1?id=", "https://x.test/s/1?id=abc123"},
		{"query ends in &id=", "https://x.test/s/1?a=1&id=", "https://x.test/s/1?a=1&id=abc123"},
		{"no query", "https://x.test/s/1", "https://x.test/s/1?id=abc123"},
		{"other query", "https://x.test/s/1?a=1", "https://x.test/s/1?a=1&id=abc123"},
		{"uid= is not id=", "https://x.test/s/1?uid=", "https://x.test/s/1?uid=&id=abc123"},
		{"trailing ?", "https://x.test/s/1?", "https://x.test/s/1?id=abc123"},
		{"respondent", "https://x.test/s?t={ID}&r={RESPONDENT_ID}", "https://x.test/s?t=abc123&r=R1X"},
		{"retarget encoded", "https://x.test/s?t={ID}&rt={RETARGET_IDENTIFIER}", "https://x.test/s?t=abc123&rt=rt+1"},
		{"demographics", "https://x.test/s?t={ID}&a={AGE}&g={GENDER}&z={ZIP_CODE}", "https://x.test/s?t=abc123&a=34&g=F&z=SW1A1AA"},
		{"question codes", "https://x.test/s?t={ID}&q={61}", "https://x.test/s?t=abc123&q=3%2C5"},
		{"question text encoded", "https://x.test/s?t={ID}&q={70}", "https://x.test/s?t=abc123&q=A%26B+C"},
		{"unanswered and unknown", "https://x.test/s?t={ID}&q={99}&u={NOPE}", "https://x.test/s?t=abc123&q=&u="},
		{"lower-case placeholder", "https://x.test/s?t={id}", "https://x.test/s?t=abc123"},
		{"fragment kept", "https://x.test/s?a=1#frag", "https://x.test/s?a=1&id=abc123#frag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SupplierLink(c.link, v, secret); got != c.want {
				t.Errorf("SupplierLink(%q)\n got %q\nwant %q", c.link, got, c.want)
			}
		})
	}

	hashCases := []struct {
		name, link, unsigned string
	}{
		{"with id", "https://x.test/s?t={ID}&security_hash={LINK_HASH}", "https://x.test/s?t=abc123"},
		{"id appended before hash", "https://x.test/s?a=1&security_hash={LINK_HASH}", "https://x.test/s?a=1&id=abc123"},
		{"empty id= before hash", "https://x.test/s?id=&security_hash={LINK_HASH}", "https://x.test/s?id=abc123"},
		{"hash only parameter", "https://x.test/s?security_hash={LINK_HASH}", "https://x.test/s?id=abc123"},
		{"values substituted first", "https://x.test/s?t={ID}&g={GENDER}&r={RESPONDENT_ID}&security_hash={LINK_HASH}", "https://x.test/s?t=abc123&g=F&r=R1X"},
	}
	for _, c := range hashCases {
		t.Run(c.name, func(t *testing.T) {
			want := c.unsigned + "&security_hash=" + hmacSHA1(secret, c.unsigned)
			if got := SupplierLink(c.link, v, secret); got != want {
				t.Errorf("SupplierLink(%q)\n got %q\nwant %q", c.link, got, want)
			}
		})
	}
}

func TestCallbackVector(t *testing.T) {
	// The published example (spec, Events).
	const (
		public = "https://www.tapresearch.com"
		secret = "f81324b50c807cd7118ffe32a34a6681"
		uri    = "/router/customers/fdbe1666a0146f54d85dbc90a5f12552/cps/complete?tid=53b183dd1a729fa04acd9ba2283af896"
		want   = "e48ad262a413283078f5841cb3beb8d75def03a2"
	)
	if got := hmacSHA1(secret, public+uri); got != want {
		t.Fatalf("independent HMAC %s, want %s", got, want)
	}
	if got := CallbackHash(public, uri, secret); got != want {
		t.Fatalf("CallbackHash = %s, want %s", got, want)
	}
	if !VerifyCallback(public, uri+"&tr_sech="+want, secret) {
		t.Fatal("the published vector does not verify")
	}
	for _, bad := range []string{
		uri, // missing
		uri + "&tr_sech=" + strings.ToUpper(want), // upper-case hex
		uri + "&tr_sech=" + want + "&x=1",         // not last
		uri + "&tr_sech=" + want[:39] + "0",       // wrong
		"/router/customers/fdbe1666a0146f54d85dbc90a5f12552/cps/complete?tr_sech=" + want,
	} {
		if VerifyCallback(public, bad, secret) {
			t.Errorf("%q verified", bad)
		}
	}
	if VerifyCallback(public, uri+"&tr_sech="+want, "other") {
		t.Error("verified with another secret")
	}
}

// signedCallback is the independent reading of docs/rules.md §7 that FuzzCallback holds the
// verifier to: a query ('?'), then the signed part ends with a final "&tr_sech=" and 40
// lower-case hex digits. It shares no code with SplitCallback.
var signedCallback = regexp.MustCompile(`(?s)^([^?]*\?.*)&tr_sech=([0-9a-f]{40})$`)

// FuzzCallback checks that verification accepts exactly the URIs whose final tr_sech is the
// HMAC of everything before it, and never panics.
func FuzzCallback(f *testing.F) {
	f.Add("/router/customers/c/cps/complete?tid=1", "k", true)
	f.Add("/router/customers/c/cps/complete?tid=1&tr_sech=00", "k", false)
	f.Add("?&tr_sech=&tr_sech=", "", true)
	f.Add("/r?tid=1&tr_sech=0123456789abcdef0123456789abcdef01234567#x", "k", false)
	f.Fuzz(func(t *testing.T, uri, secret string, sign bool) {
		const public = "http://h"
		full := uri
		if sign {
			full = uri + "&tr_sech=" + hmacSHA1(secret, public+uri)
		}
		got := VerifyCallback(public, full, secret)
		m := signedCallback.FindStringSubmatch(full)
		want := m != nil && hmacSHA1(secret, public+m[1]) == m[2]
		if got != want {
			t.Fatalf("VerifyCallback(%q) = %v, independent check %v", full, got, want)
		}
		if sign && strings.Contains(uri, "?") && !got {
			t.Fatalf("a correctly signed %q did not verify", full)
		}
	})
}
