package supply

import (
	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine/fault"
	"github.com/switchboard/switchboard/router/entrytoken"
)

// The hosted pages are opened by the participant's browser: they carry no X-Api-Token and
// are authorized by their signed token instead (403 when missing, forged or expired).

const pageHead = `<!doctype html><html><head><meta charset="utf-8"><title>Switchboard</title></head><body>`

func (a *API) pageToken(ctx *fasthttp.RequestCtx, kind uint8) (entrytoken.Claims, bool) {
	c, err := a.key.Verify(string(ctx.QueryArgs().Peek("token")), a.now())
	if err == nil && c.Kind != kind {
		err = errWrongKind
	}
	if err != nil {
		ctx.SetStatusCode(fasthttp.StatusForbidden)
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetBodyString(pageHead + "<p>This link is invalid or has expired.</p></body></html>")
		return c, false
	}
	return c, true
}

// profilePage is the hosted profiler (integration path 2). Placeholder for now.
func (a *API) profilePage(ctx *fasthttp.RequestCtx) {
	if _, ok := a.pageToken(ctx, entrytoken.KindProfile); !ok {
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBodyString(pageHead + "<h1>Profiler coming soon</h1></body></html>")
}

// supportPage is the hosted support page of a session. Placeholder for now.
func (a *API) supportPage(ctx *fasthttp.RequestCtx) {
	if _, ok := a.pageToken(ctx, entrytoken.KindSupport); !ok {
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBodyString(pageHead + "<h1>Support</h1><p>Contact your app's support team and mention this page's link.</p></body></html>")
}

var errWrongKind = fault.Forbidden("token is not valid for this page")
