package pagekit

import (
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/entrytoken"
)

// Every language has every string the templates and pages use.
func TestTranslationsComplete(t *testing.T) {
	en := Translations("en")
	for _, lang := range Languages() {
		s := Translations(lang)
		for k := range en {
			if strings.TrimSpace(s[k]) == "" {
				t.Errorf("%s lacks %q", lang, k)
			}
		}
		for k := range s {
			if _, ok := en[k]; !ok {
				t.Errorf("%s has unknown %q", lang, k)
			}
			if strings.Count(s[k], "%s") != strings.Count(en[k], "%s") {
				t.Errorf("%s %q has other placeholders than English", lang, k)
			}
		}
	}
	// Every {{.T.key}} of the templates exists.
	re := regexp.MustCompile(`\.T\.([a-z_]+)`)
	names, _ := files.ReadDir("templates")
	for _, n := range names {
		b, _ := files.ReadFile("templates/" + n.Name())
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if _, ok := en[m[1]]; !ok {
				t.Errorf("%s uses unknown string %q", n.Name(), m[1])
			}
		}
	}
}

func TestRenderCSPMatchesStyle(t *testing.T) {
	var ctx fasthttp.RequestCtx
	Render(&ctx, zap.NewNop(), 200, "message", CSP("https://partner.test", "", "https://partner.test"),
		&Message{Base: Base{Lang: "en", Title: "x"}, Heading: "<b>", Body: "b"})
	body := string(ctx.Response.Body())
	m := regexp.MustCompile(`(?s)<style>(.*)</style>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no style element")
	}
	sum := sha256.Sum256([]byte(m[1]))
	csp := string(ctx.Response.Header.Peek("Content-Security-Policy"))
	want := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src 'self'; form-action 'self' https://partner.test; base-uri 'none'; frame-ancestors 'none'"
	if csp != want {
		t.Fatalf("CSP %q\nwant %q", csp, want)
	}
	if !strings.Contains(body, "<h1>&lt;b&gt;</h1>") || !strings.Contains(body, `<html lang="en">`) {
		t.Fatalf("body %s", body)
	}
}

func TestCSRF(t *testing.T) {
	key := entrytoken.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	v := CSRF(key, FormProfile, "tok")
	if len(v) != 32 || v == CSRF(key, FormSupport, "tok") || v == CSRF(key, FormProfile, "tok2") {
		t.Fatalf("csrf values not bound to form and token: %s", v)
	}
	post := func(csrf string, headers map[string]string) bool {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetHost("pages.test")
		ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
		ctx.Request.SetBodyString("csrf=" + csrf)
		for k, v := range headers {
			ctx.Request.Header.Set(k, v)
		}
		return CheckPost(&ctx, key, FormProfile, "tok", "https://pages.test")
	}
	for _, c := range []struct {
		csrf    string
		headers map[string]string
		ok      bool
	}{
		{v, nil, true},
		{v, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"}, true},
		{v, map[string]string{"Origin": "https://pages.test"}, true},
		{v, map[string]string{"Origin": "null"}, true},
		{v, map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{v, map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{v, map[string]string{"Origin": "https://evil.test"}, false},
		{"", nil, false},
		{strings.Repeat("0", 32), nil, false},
		{v[:30], nil, false},
	} {
		if got := post(c.csrf, c.headers); got != c.ok {
			t.Errorf("csrf %q headers %v: %v, want %v", c.csrf, c.headers, got, c.ok)
		}
	}
}

func TestAcceptLanguage(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Accept-Language", "xx;q=0.9, de-DE;q=0.8, fr-CA, *;q=0.1, <bad>")
	tags := AcceptLanguage(&ctx)
	if strings.Join(tags, ",") != "fr-CA,<bad>,xx,de-DE" {
		t.Fatalf("tags %q", tags)
	}
	if got := Negotiate(&ctx); got != "fr-CA" {
		t.Fatalf("negotiate %q", got)
	}
	if RegionOf("es-US") != "US" || RegionOf("de") != "" || RegionOf("zh-Hant-TW") != "TW" {
		t.Fatal("RegionOf")
	}
}
