package router

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

// hmacSHA1 is computed here independently of the code under test.
func hmacSHA1(key, msg string) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
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
