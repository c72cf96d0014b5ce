// Package pagekit is the plumbing of the hosted participant pages (the profiler, the
// pre-screener, the support page, and the demo partner's return page of serve --demo): server-rendered html/template pages embedded in the
// binary, one stylesheet inlined under a CSP hash, security headers, per-form CSRF values,
// localized interface strings and the invalid-link page.
//
// Pages are opened by a participant's browser and authorized by a signed entrytoken in the
// URL. They carry no secret, load nothing from elsewhere and run no script.
package pagekit

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
)

//go:embed templates/*.html style.css
var files embed.FS

var (
	style      template.CSS
	styleHash  string
	pages      = map[string]*template.Template{}
	cspDefault string
)

func init() {
	b, err := files.ReadFile("style.css")
	if err != nil {
		panic(err)
	}
	style = template.CSS(b)
	sum := sha256.Sum256(b)
	styleHash = "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	cspDefault = CSP()

	layout := template.Must(template.New("layout.html").ParseFS(files, "templates/layout.html"))
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		pages[name] = template.Must(template.Must(layout.Clone()).ParseFS(files, n))
	}
}

// CSP is the Content-Security-Policy of every page: nothing loads but the inline stylesheet
// (by its hash); forms post to this origin, and to formOrigins, the origins a successful
// post redirects to (browsers apply form-action to the redirects of a form submission).
func CSP(formOrigins ...string) string {
	var b strings.Builder
	b.WriteString("default-src 'none'; style-src ")
	b.WriteString(styleHash)
	b.WriteString("; img-src 'self'; form-action 'self'")
	seen := map[string]bool{}
	for _, o := range formOrigins {
		if o == "" || seen[o] {
			continue
		}
		seen[o] = true
		b.WriteByte(' ')
		b.WriteString(o)
	}
	b.WriteString("; base-uri 'none'; frame-ancestors 'none'")
	return b.String()
}

// Origin returns the scheme://host[:port] of an absolute http(s) URL, or "".
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.ContainsAny(u.Host, " ;'\"") {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Base is what every page's layout reads.
type Base struct {
	Lang       string // the html lang attribute, e.g. en-US
	T          Strings
	Title      string
	SupportURL string // "Need help?" link; empty: none
	Errors     []FieldError
	Style      template.CSS
}

// FieldError is one entry of a form's error summary: the message and the id of the field
// (or fieldset's first control) it is about.
type FieldError struct {
	Field   string
	Message string
}

// Page is any page's data: it embeds Base.
type Page interface{ base() *Base }

func (b *Base) base() *Base { return b }

// Render writes page name with status and the security headers. csp "" is the default.
func Render(ctx *fasthttp.RequestCtx, log *zap.Logger, status int, name, csp string, data Page) {
	t := pages[name]
	b := data.base()
	b.Style = style
	if b.T == nil {
		b.T = Lookup("")
	}
	var buf bytes.Buffer
	buf.Grow(16 << 10)
	if t == nil {
		log.Error("unknown page template", zap.String("page", name))
		status, csp = fasthttp.StatusInternalServerError, ""
		buf.WriteString("internal error")
	} else if err := t.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		log.Error("page template failed", zap.String("page", name), zap.Error(err))
		status = fasthttp.StatusInternalServerError
		buf.Reset()
		buf.WriteString("internal error")
	}
	SetHeaders(ctx, csp)
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// SetHeaders sets the security headers of a page (csp "" is the default policy). No page is
// cached, and no page tells where it was reached from (its URL carries a token).
func SetHeaders(ctx *fasthttp.RequestCtx, csp string) {
	if csp == "" {
		csp = cspDefault
	}
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()")
}

// Message is a page that only says something: the invalid-link page, the expired-form page.
type Message struct {
	Base
	Heading string
	Body    string
}

// Forbidden answers 403 with the invalid-link page in the language of the request.
func Forbidden(ctx *fasthttp.RequestCtx, log *zap.Logger) {
	lang := Negotiate(ctx)
	t := Lookup(lang)
	Render(ctx, log, fasthttp.StatusForbidden, "message", "", &Message{Base: Base{Lang: lang, T: t, Title: t["invalid_title"]},
		Heading: t["invalid_title"], Body: t["invalid_body"]})
}

// FormExpired answers 403 to a post whose CSRF value is missing or wrong, or that comes
// from another site.
func FormExpired(ctx *fasthttp.RequestCtx, log *zap.Logger, lang string) {
	t := Lookup(lang)
	Render(ctx, log, fasthttp.StatusForbidden, "message", "", &Message{Base: Base{Lang: lang, T: t, Title: t["expired_title"]},
		Heading: t["expired_title"], Body: t["expired_body"]})
}

// SeeOther answers a successful post with 303 to location, byte for byte (signed URLs must
// not be re-encoded).
func SeeOther(ctx *fasthttp.RequestCtx, location string) {
	SetHeaders(ctx, "")
	ctx.Response.Header.Set("Location", location)
	ctx.SetStatusCode(fasthttp.StatusSeeOther)
}

// Failure answers an error that is not the participant's: 503 when the database is
// unreachable (Retry-After 1; counted in the server's incident log, httpio.MarkUnavailable),
// 429 for a rate limit, else 500 (the cause logged).
func Failure(ctx *fasthttp.RequestCtx, log *zap.Logger, lang string, err error) {
	t := Lookup(lang)
	status := fasthttp.StatusInternalServerError
	heading, body := t["failure_title"], t["failure_body"]
	switch fault.KindOf(err) {
	case fault.KindUnavailable:
		status = fasthttp.StatusServiceUnavailable
		ctx.Response.Header.Set("Retry-After", "1")
		httpio.MarkUnavailable(ctx, err)
	case fault.KindRateLimited:
		status = fasthttp.StatusTooManyRequests
		heading, body = t["too_many_title"], t["too_many_body"]
	default:
		log.Error("page failed", zap.ByteString("path", ctx.Path()), zap.Error(err))
	}
	Render(ctx, log, status, "message", "", &Message{Base: Base{Lang: lang, T: t, Title: heading}, Heading: heading, Body: body})
}

// Stylesheet returns a copy of the hosted pages' stylesheet, which the web console serves
// (with its own additions) as a file under its style-src 'self' policy.
func Stylesheet() []byte {
	b, _ := files.ReadFile("style.css") // embedded: read at init already
	return b
}
