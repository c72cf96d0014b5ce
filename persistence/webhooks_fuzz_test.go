package persistence

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzValidateWebhookURL: whatever a buyer sends, an accepted URL is an absolute http(s) URL
// with a host, without credentials, fragment or white space, within MaxWebhookURL bytes.
func FuzzValidateWebhookURL(f *testing.F) {
	for _, s := range []string{"https://buyer.example/hooks?x=1", "http://127.0.0.1:8080/h", "ftp://x/", "https://u:p@x/",
		"https://x/#f", "//x/h", "https:///h", "https://x/ h", "https://[::1]:9/h", "HTTPS://X.EXAMPLE/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateWebhookURL(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Fragment != "" || strings.ContainsAny(s, " \t\r\n#") || len(s) > MaxWebhookURL {
			t.Fatalf("accepted %q", s)
		}
	})
}
