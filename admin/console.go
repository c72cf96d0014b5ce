package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
)

// The web console (/console) is the buyer API's domain seen in a browser: a buyer signs in
// with their e-mail and API token and reads their campaigns, and pauses, activates,
// completes them or changes a quota's target through the same functions as the API routes;
// the campaign workspace (console_forms.go) creates, clones and edits them likewise.
// Operators sign in with an operator token (console_operator.go). Pages are server-rendered
// and need no script (the quota form's live estimate is the one, optional), and every form
// carries a CSRF value bound to the session.

// ConsolePrefix is the path prefix of every console page.
const ConsolePrefix = "/console"

// consoleCSP is the Content-Security-Policy of every console page: the console's own
// stylesheet, SVG charts inline, forms posting only to this origin, never framed.
const consoleCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; " +
	"base-uri 'none'; frame-ancestors 'none'"

// Cookie names. The session cookie holds the session id (the database keeps its hash); the
// sign-in cookie holds a random value the sign-in form's CSRF value is bound to.
const (
	sessionCookie = "sb_console"
	signInCookie  = "sb_console_signin"
)

// Form names of the console's CSRF values.
const (
	formConsole = "console"
	formSignIn  = "console-sign-in"
)

// defaultConsoleTTL is how long a console session lasts when Deps.ConsoleTTL is 0.
const defaultConsoleTTL = 8 * time.Hour

//go:embed console/*.html console/console.css
var consoleFiles embed.FS

var (
	consolePages = map[string]*template.Template{}
	consoleStyle []byte
)

func init() {
	css, err := consoleFiles.ReadFile("console/console.css")
	if err != nil {
		panic(err)
	}
	consoleStyle = append(append(pagekit.Stylesheet(), '\n'), css...)
	funcs := template.FuncMap{"percent": percent, "money": func(c persistence.Cents) string { return c.String() },
		"statusName": statusLabel, "deref": func(p *float64) float64 { return *p }, "fieldError": fieldError}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(consoleFiles, "console/layout.html"))
	names, err := fs.Glob(consoleFiles, "console/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "console/"), ".html")
		if name == "layout" {
			continue
		}
		consolePages[name] = template.Must(template.Must(layout.Clone()).ParseFS(consoleFiles, n))
	}
}

// sessionStore signs operators in and keeps console sessions (persistence OperatorStore).
type sessionStore interface {
	AuthenticateOperator(ctx context.Context, token string) (persistence.Operator, error)
	CreateConsoleSession(ctx context.Context, who persistence.ConsoleSignIn, ttl time.Duration) (string, time.Time, error)
	ConsoleSessionOf(ctx context.Context, id string) (persistence.ConsoleSession, error)
	EndConsoleSession(ctx context.Context, id string) error
}

// console is what every console page shares: sign-in and sessions, the CSRF values, the
// layout and the one error page (consoleFail). The page types (consoleSite) embed it.
type console struct {
	buyers       buyerAuthenticator
	sessions     sessionStore
	log          *zap.Logger
	env          string
	publicURL    string
	key          *entrytoken.Key
	ttl          time.Duration
	authFailures *httpio.AuthFailures
}

// consoleSite is the console's pages by family; each holds what it uses, and the
// buyer interface's families where it acts through them.
type consoleSite struct {
	*console
	campaigns  *campaignPages
	workspace  *workspacePages
	operator   *operatorPages
	statements *statementPages
	webhook    *webhookPages
}

// newConsoleSite returns the console of d, acting through the families of a.
func newConsoleSite(d Deps, a *API) consoleSite {
	c := &console{buyers: d.Buyers, sessions: d.Sessions, log: d.Log, env: d.Environment, publicURL: d.PublicURL,
		key: d.Key, ttl: d.ConsoleTTL, authFailures: d.AuthFailures}
	return consoleSite{
		console: c,
		campaigns: &campaignPages{console: c, store: d.Campaigns, catalog: d.Catalog, activity: d.Activity,
			suppliers: d.Suppliers, env: d.Environment, campaigns: a.campaigns, quotas: a.quotas},
		workspace: &workspacePages{console: c, store: d.Campaigns, screenerStore: d.Screeners, catalog: d.Catalog,
			suppliers: d.Suppliers, tx: d.Tx, env: d.Environment, campaigns: a.campaigns, quotas: a.quotas,
			screeners: a.screeners, feasibility: a.feasibility},
		operator: &operatorPages{console: c, publishers: d.Publishers, market: d.Market, quality: d.Quality,
			heartbeats: d.Processes, postbacks: d.Postbacks, engineStatus: d.EngineStatus},
		statements: &statementPages{console: c, ledger: d.Ledger},
		webhook:    &webhookPages{console: c, store: d.Accounts, deliveries: d.Deliveries, accounts: a.accounts},
	}
}

// consoleBase is what the console layout reads.
type consoleBase struct {
	Title    string
	CSRF     string // the CSRF value of the page's forms (the session's, or the sign-in form's)
	SignedIn bool   // shows the navigation and the sign-out form
	Buyer    string // the signed-in buyer's e-mail
	Operator string // the signed-in operator's name
	// ReadOnly hides every control that changes something: a buyer signed in with a read
	// token, or an operator whose role is viewer (page refuses their posts).
	ReadOnly bool
	Notice   string // a one-line confirmation ("Campaign paused")
	Errors   []pagekit.FieldError
}

// render writes console page name (data embeds consoleBase) with status and the console's security headers.
func (a *console) render(ctx *fasthttp.RequestCtx, status int, name string, data any) {
	var buf bytes.Buffer
	t := consolePages[name]
	if t == nil {
		a.log.Error("unknown console template", zap.String("page", name))
		status = fasthttp.StatusInternalServerError
		buf.WriteString("internal error")
	} else if err := t.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		a.log.Error("console template failed", zap.String("page", name), zap.Error(err))
		status = fasthttp.StatusInternalServerError
		buf.Reset()
		buf.WriteString("internal error")
	}
	pagekit.SetHeaders(ctx, consoleCSP)
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// fieldError is the message of errs about field ("": none), for the field's own error line.
func fieldError(errs []pagekit.FieldError, field string) string {
	for _, e := range errs {
		if e.Field == field {
			return e.Message
		}
	}
	return ""
}

// consoleMessage is a page that only says something (not found, form expired, failure).
type consoleMessage struct {
	consoleBase
	Heading, Body string
}

func (a *console) message(ctx *fasthttp.RequestCtx, status int, heading, body string) {
	a.render(ctx, status, "message", &consoleMessage{consoleBase: consoleBase{Title: heading}, Heading: heading, Body: body})
}

// consoleFail answers err on a console page: sign-in again for an ended session, a page
// naming the problem for what the user can act on, the busy page when the database is
// unavailable (httpio.MarkUnavailable), else the failure page (cause logged).
func (a *console) consoleFail(ctx *fasthttp.RequestCtx, signIn string, err error) {
	f := fault.As(err)
	kind := fault.KindOf(err)
	switch {
	case kind == fault.KindUnauthorized:
		a.seeOther(ctx, signIn)
	case kind == fault.KindNotFound:
		a.message(ctx, fasthttp.StatusNotFound, "Not found", "There is nothing here, or it is not yours.")
	case (kind == fault.KindInvalid || kind == fault.KindConflict || kind == fault.KindBadRequest) && f != nil:
		a.message(ctx, fasthttp.StatusUnprocessableEntity, "Not changed", f.Message) // the API's, its field named
	case kind == fault.KindRateLimited:
		a.message(ctx, fasthttp.StatusTooManyRequests, "Too many attempts", "Wait a moment, then try again.")
	case kind == fault.KindUnavailable:
		ctx.Response.Header.Set("Retry-After", "1")
		httpio.MarkUnavailable(ctx, err)
		a.message(ctx, fasthttp.StatusServiceUnavailable, "Unavailable", "The service is busy. Try again in a moment.")
	default:
		a.log.Error("console page failed", zap.ByteString("path", ctx.Path()), zap.Error(err))
		a.message(ctx, fasthttp.StatusInternalServerError, "Something went wrong", "Try again in a moment.")
	}
}

func (a *console) seeOther(ctx *fasthttp.RequestCtx, location string) {
	pagekit.SetHeaders(ctx, consoleCSP)
	ctx.Response.Header.Set("Location", location)
	ctx.SetStatusCode(fasthttp.StatusSeeOther)
}

// secureCookies reports whether cookies must be Secure: the public URL is https.
func (a *console) secureCookies() bool { return strings.HasPrefix(a.publicURL, "https://") }

// setCookie sets a console cookie: HttpOnly, SameSite=Lax, Secure under https, scoped to
// /console, expiring at expires (zero: deleted).
func (a *console) setCookie(ctx *fasthttp.RequestCtx, name, value string, expires time.Time) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	c.SetValue(value)
	c.SetPath(ConsolePrefix)
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	c.SetSecure(a.secureCookies())
	if expires.IsZero() {
		c.SetExpire(fasthttp.CookieExpireDelete)
		c.SetMaxAge(-1)
	} else {
		c.SetExpire(expires)
		c.SetMaxAge(int(time.Until(expires).Seconds()))
	}
	ctx.Response.Header.SetCookie(c)
}

// randomValue is 32 random bytes, hex.
func randomValue() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// consoleSession is the signed-in session of a console request.
type consoleSession struct {
	id string
	persistence.ConsoleSession
	csrf string
}

// readOnly reports whether the session may only read: a buyer's signed in with a token
// whose scope is not write, or an operator's whose role is not admin.
func (s *consoleSession) readOnly() bool {
	if s.Operator.ID != 0 {
		return s.Operator.Role != persistence.RoleAdmin
	}
	return s.Buyer.Scope != persistence.ScopeWrite
}

// consoleHandler is a console page's logic for a signed-in session.
type consoleHandler func(ctx *fasthttp.RequestCtx, s *consoleSession) error

// page wraps h: the session cookie must name a live session of the right kind (buyer or
// operator), else the browser is sent to signIn; a post must carry the session's CSRF
// value and come from this site, and a read-only session (a read token, a viewer) posts
// nothing (403 otherwise): the one place that keeps such sessions from changing anything.
func (a *console) page(operator bool, signIn string, h consoleHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		dbc, cancel := httpio.DBContext(requestTimeout)
		defer cancel()
		ctx.SetUserValue(dbContextKey, dbc)
		id := string(ctx.Request.Header.Cookie(sessionCookie))
		if len(id) != 64 {
			a.seeOther(ctx, signIn)
			return
		}
		s, err := a.sessions.ConsoleSessionOf(dbc, id)
		if err == nil && (operator && s.Operator.ID == 0 || !operator && s.Buyer.ID == 0) {
			err = fault.Unauthorized("wrong kind of session")
		}
		if err != nil {
			a.consoleFail(ctx, signIn, err)
			return
		}
		cs := &consoleSession{id: id, ConsoleSession: s, csrf: a.csrf(formConsole, id)}
		if ctx.IsPost() && !pagekit.CheckPost(ctx, a.key, formConsole, id, a.publicURL) {
			a.message(ctx, fasthttp.StatusForbidden, "This form has expired", "Go back, reload the page and try again.")
			return
		}
		if ctx.IsPost() && cs.readOnly() {
			a.refuseReadOnly(ctx)
			return
		}
		if err := h(ctx, cs); err != nil {
			a.consoleFail(ctx, signIn, err)
		}
	}
}

// refuseReadOnly answers what a read-only session may not do (403).
func (a *console) refuseReadOnly(ctx *fasthttp.RequestCtx) {
	a.message(ctx, fasthttp.StatusForbidden, "This session is read-only",
		"You signed in with a read token or as a viewer: the console shows, and changes nothing.")
}

// csrf is the CSRF value of form for value (a session id, or the sign-in cookie).
func (a *console) csrf(form, value string) string { return pagekit.CSRF(a.key, form, value) }

// base is the layout data of a signed-in page.
func (s *consoleSession) base(title string) consoleBase {
	return consoleBase{Title: title, CSRF: s.csrf, SignedIn: true, Buyer: s.Buyer.Email, Operator: s.Operator.Name,
		ReadOnly: s.readOnly()}
}

// RegisterConsole mounts the web console under /console. Without Deps.Key (which signs
// its CSRF values) it mounts nothing.
func (a *API) RegisterConsole(mux *httpio.Mux) {
	c := a.pages
	if c.key == nil {
		return
	}
	p := ConsolePrefix
	mux.Handle("GET", p, func(ctx *fasthttp.RequestCtx) { c.seeOther(ctx, p+"/campaigns") })
	mux.Handle("GET", p+"/style.css", c.consoleCSS)
	mux.Handle("GET", p+"/sign-in", c.signInForm(false))
	mux.Handle("POST", p+"/sign-in", c.signIn(false))
	mux.Handle("POST", p+"/sign-out", c.signOut)
	buyer := func(h consoleHandler) fasthttp.RequestHandler { return c.page(false, p+"/sign-in", h) }
	mux.Handle("GET", p+"/campaigns", buyer(c.campaigns.consoleCampaigns))
	mux.Handle("GET", p+"/campaigns.csv", buyer(c.campaigns.consoleCampaignsCSV))
	mux.Handle("GET", p+"/campaigns/{id}", buyer(c.campaigns.consoleCampaign))
	mux.Handle("GET", p+"/campaigns/{id}/completes.csv", buyer(c.campaigns.consoleCompletesCSV))
	mux.Handle("GET", p+"/campaigns/{id}/outcomes.csv", buyer(c.campaigns.consoleOutcomesCSV))
	mux.Handle("POST", p+"/campaigns/{id}/status", buyer(c.campaigns.consoleStatus))
	mux.Handle("POST", p+"/campaigns/{id}/quotas/{quota_id}", buyer(c.campaigns.consoleQuota))
	c.webhook.registerConsoleWebhook(mux, buyer)
	c.workspace.registerConsoleForms(mux, buyer)
	c.statements.registerConsoleStatements(mux, buyer) // console_statements.go
	c.operator.registerOperator(mux)
}

// consoleCSS serves the console's stylesheet: the hosted pages' one and the console's.
func (a *console) consoleCSS(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Cache-Control", "public, max-age=3600")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetContentType("text/css; charset=utf-8")
	ctx.SetBody(consoleStyle)
}

// signInPage is the sign-in form of buyers (e-mail and API token) or operators (token).
type signInPage struct {
	consoleBase
	Operator bool
	Action   string
	Email    string
}

// signInForm shows the sign-in form with a CSRF value bound to a fresh sign-in cookie.
func (a *console) signInForm(operator bool) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		a.renderSignIn(ctx, fasthttp.StatusOK, operator, "", nil)
	}
}

func (a *console) renderSignIn(ctx *fasthttp.RequestCtx, status int, operator bool, email string, errs []pagekit.FieldError) {
	v := randomValue()
	a.setCookie(ctx, signInCookie, v, time.Now().Add(time.Hour))
	title, action := "Sign in", ConsolePrefix+"/sign-in"
	if operator {
		title, action = "Operator sign-in", ConsolePrefix+"/operator/sign-in"
	}
	a.render(ctx, status, "sign_in", &signInPage{consoleBase: consoleBase{Title: title, CSRF: a.csrf(formSignIn, v), Errors: errs},
		Operator: operator, Action: action, Email: email})
}

// signIn checks the credentials posted (a buyer's e-mail and API token through the API's own
// check, or an operator token), under the per-address limit of failed authentications, and
// opens a session.
func (a *console) signIn(operator bool) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		pre := string(ctx.Request.Header.Cookie(signInCookie))
		if pre == "" || !pagekit.CheckPost(ctx, a.key, formSignIn, pre, a.publicURL) {
			a.message(ctx, fasthttp.StatusForbidden, "This form has expired", "Go back, reload the page and try again.")
			return
		}
		now := time.Now()
		if err := a.authFailures.Refuse(ctx, now); err != nil {
			a.consoleFail(ctx, "", err)
			return
		}
		dbc, cancel := httpio.DBContext(requestTimeout)
		defer cancel()
		email := strings.TrimSpace(string(ctx.PostArgs().Peek("email")))
		token := strings.TrimSpace(string(ctx.PostArgs().Peek("token")))
		var who persistence.ConsoleSignIn
		var err error
		if token == "" {
			err = fault.Unauthorized("no token")
		} else if operator {
			var o persistence.Operator
			o, err = a.sessions.AuthenticateOperator(dbc, token)
			who.OperatorID = o.ID
		} else {
			var b persistence.Buyer
			b, err = a.buyers.AuthenticateBuyer(dbc, strings.ToLower(email), token, a.env)
			who = persistence.ConsoleSignIn{BuyerID: b.ID, BuyerToken: token}
		}
		if fault.KindOf(err) == fault.KindUnauthorized {
			a.authFailures.Fail(ctx, now)
			msg := "The e-mail address or the API token is wrong."
			if operator {
				msg = "The operator token is wrong."
			}
			a.renderSignIn(ctx, fasthttp.StatusUnauthorized, operator, email, []pagekit.FieldError{{Field: "token", Message: msg}})
			return
		}
		if err != nil {
			a.consoleFail(ctx, "", err)
			return
		}
		ttl := a.ttl
		if ttl <= 0 {
			ttl = defaultConsoleTTL
		}
		id, expires, err := a.sessions.CreateConsoleSession(dbc, who, ttl)
		if err != nil {
			a.consoleFail(ctx, "", err)
			return
		}
		a.setCookie(ctx, signInCookie, "", time.Time{})
		a.setCookie(ctx, sessionCookie, id, expires)
		if operator {
			a.seeOther(ctx, ConsolePrefix+"/operator")
		} else {
			a.seeOther(ctx, ConsolePrefix+"/campaigns")
		}
	}
}

// signOut ends the session of the cookie (its CSRF value required), clears the cookie and
// shows the sign-in form of the view signed out of.
func (a *console) signOut(ctx *fasthttp.RequestCtx) {
	id := string(ctx.Request.Header.Cookie(sessionCookie))
	if id == "" || !pagekit.CheckPost(ctx, a.key, formConsole, id, a.publicURL) {
		a.message(ctx, fasthttp.StatusForbidden, "This form has expired", "Go back, reload the page and try again.")
		return
	}
	dbc, cancel := httpio.DBContext(requestTimeout)
	defer cancel()
	if err := a.sessions.EndConsoleSession(dbc, id); err != nil {
		a.consoleFail(ctx, "", err)
		return
	}
	a.setCookie(ctx, sessionCookie, "", time.Time{})
	if string(ctx.PostArgs().Peek("view")) == "operator" {
		a.seeOther(ctx, ConsolePrefix+"/operator/sign-in")
		return
	}
	a.seeOther(ctx, ConsolePrefix+"/sign-in")
}
