package pagekit

import (
	"crypto/hmac"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/entrytoken"
)

// Form names: a CSRF value is valid for one form of one token.
const (
	FormProfile   = "profile"
	FormPrescreen = "prescreen"
	FormSupport   = "support"
)

// csrfSize is the number of MAC bytes kept (hex-encoded in the form).
const csrfSize = 16

// CSRF is the anti-forgery value of form for token: the first 16 bytes of HMAC-SHA256 under
// the service key of ("csrf", form, token), hex. It binds a post to the page that was
// served for that token: a post with another token's value, or none, is refused.
func CSRF(key *entrytoken.Key, form, token string) string {
	m := key.MAC("csrf", form, token)
	return hex.EncodeToString(m[:csrfSize])
}

// CheckPost verifies a form post: the CSRF field matches token in constant time, and the
// browser did not send it from another site (Sec-Fetch-Site, else Origin, when sent).
// publicURL is the service's public base URL.
func CheckPost(ctx *fasthttp.RequestCtx, key *entrytoken.Key, form, token, publicURL string) bool {
	got, err := hex.DecodeString(string(ctx.PostArgs().Peek("csrf")))
	if err != nil || len(got) != csrfSize || token == "" {
		return false
	}
	want := key.MAC("csrf", form, token)
	if !hmac.Equal(got, want[:csrfSize]) {
		return false
	}
	return sameSite(ctx, publicURL)
}

// sameSite reports whether the post came from this service's own pages. Browsers send
// Sec-Fetch-Site with every form post: only same-origin passes. Older browsers send Origin
// (as "null" under the pages' no-referrer policy), which must then be this service's when
// it names one. Clients that send neither are not browsers: they carry the token and the
// CSRF value themselves.
func sameSite(ctx *fasthttp.RequestCtx, publicURL string) bool {
	switch string(ctx.Request.Header.Peek("Sec-Fetch-Site")) {
	case "same-origin":
		return true
	case "":
	default: // cross-site, same-site, none
		return false
	}
	origin := string(ctx.Request.Header.Peek("Origin"))
	if origin == "" || origin == "null" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if pu, err := url.Parse(publicURL); err == nil && strings.EqualFold(pu.Host, u.Host) {
		return true
	}
	return strings.EqualFold(u.Host, string(ctx.Host()))
}

// FormToken returns the token of a request: the form field on a post, else the query
// parameter.
func FormToken(ctx *fasthttp.RequestCtx) string {
	if ctx.IsPost() {
		if t := ctx.PostArgs().Peek("token"); len(t) > 0 {
			return string(t)
		}
	}
	return string(ctx.QueryArgs().Peek("token"))
}
