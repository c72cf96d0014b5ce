package browsertest

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/router/payout"
)

// page sends a browser-like request: a form post when form is not nil.
func (w *world) page(method, path string, form url.Values, header map[string]string) apptest.Response {
	w.t.Helper()
	var body any
	if form != nil {
		body = form.Encode()
	}
	req := w.s.NewRequest(w.t, method, path, body)
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", w.s.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return w.s.Send(w.t, req)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t testing.TB, r apptest.Response) string {
	t.Helper()
	m := csrfRe.FindSubmatch(r.Body)
	if m == nil {
		t.Fatalf("no csrf field in %s", r.Body)
	}
	return string(m[1])
}

// expectPage checks an HTML page: status, content type, the security headers.
func expectPage(t testing.TB, r apptest.Response, status int, contains ...string) {
	t.Helper()
	r.Expect(t, status)
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "style-src 'sha256-", "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, d) {
			t.Fatalf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Fatalf("CSP %q is not strict", csp)
	}
	if r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("Cache-Control") != "no-store" ||
		r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("security headers %v", r.Header)
	}
	body := string(r.Body)
	if strings.Contains(body, "<script") || strings.Contains(body, " style=") {
		t.Fatalf("page has script or inline style attributes")
	}
	for _, c := range contains {
		if !strings.Contains(body, c) {
			t.Fatalf("page (%d) lacks %q:\n%s", r.Status, c, body)
		}
	}
}

func expectSeeOther(t testing.TB, r apptest.Response, prefix string) *url.URL {
	t.Helper()
	r.Expect(t, http.StatusSeeOther)
	loc := r.Header.Get("Location")
	if !strings.HasPrefix(loc, prefix) {
		t.Fatalf("Location %q, want prefix %q", loc, prefix)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// forged returns token with its last tag character changed.
func forged(token string) string {
	last := token[len(token)-1]
	c := byte('A')
	if last == 'A' {
		c = 'B'
	}
	return token[:len(token)-1] + string(c)
}

func TestProfilerHTTP(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	campaignID, _ := w.campaign("Coffee habits")
	user := newUser()
	o := w.offers(user)
	if len(o.Surveys) != 1 || o.Surveys[0].Identifier != "profile" {
		t.Fatalf("unprofiled offers %+v", o)
	}
	profileURL := w.path(o.Surveys[0].OfferEntryURL)
	token := tokenOf(t, o.Surveys[0].OfferEntryURL)
	en := map[string]string{"Accept-Language": "en-US,en;q=0.9"}

	// Token checks: missing, forged, expired, wrong kind.
	expectPage(t, w.page("GET", "/supply_api/v4/profile", nil, nil), 403, "This link does not work")
	expectPage(t, w.page("GET", "/supply_api/v4/profile?token="+forged(token), nil, nil), 403)
	key := w.s.App.Supply.Key()
	claims, err := key.Verify(token, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	old := claims
	old.Expires = time.Now().Unix() - 1
	expectPage(t, w.page("GET", "/supply_api/v4/profile?token="+key.Sign(old), nil, nil), 403)
	expectPage(t, w.page("GET", "/supply_api/v4/profile?token="+tokenOf(t, o.Surveys[0].SupportURL), nil, nil), 403)

	// Without a region in the browser's languages the country comes first; German gets the
	// German catalog.
	r := w.page("GET", profileURL, nil, map[string]string{"Accept-Language": "de"})
	expectPage(t, r, 200, `<html lang="de">`, "Wo wohnen Sie?", `name="country"`, `lang="de-DE">Deutschland</label>`)
	r = w.page("GET", profileURL+"&choose=2", nil, nil)
	expectPage(t, r, 422, "Choose the country where you live.", `role="alert"`)
	r = w.page("GET", profileURL+"&country=4", nil, nil)
	expectPage(t, r, 200, `<html lang="de-DE">`, "Erzählen Sie uns von sich", "Wie alt sind Sie?")

	// The US profiler, from the browser's en-US.
	r = w.page("GET", profileURL, nil, en)
	expectPage(t, r, 200, `<html lang="en-US">`, "Tell us about yourself", "What is your age?",
		`<fieldset class="q" id="q43" aria-describedby="q43-hint">`, `<legend>What is your gender?</legend>`,
		`type="radio" id="q43-1" name="q43" value="1" required><label for="q43-1">`,
		`type="checkbox" id="q110-`, `<label class="field" for="q42">`, `type="number"`, `autocomplete="postal-code"`)
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "form-action 'self' "+w.partner.srv.URL+";") {
		t.Fatalf("CSP %q does not admit the partner's redirect", csp)
	}
	if strings.Contains(string(r.Body), w.pub.APISecret) || strings.Contains(string(r.Body), w.pubToken) {
		t.Fatal("the page shows a secret")
	}
	csrf := csrfOf(t, r)
	good := url.Values{"token": {token}, "csrf": {csrf}, "country": {"1"}, "q42": {"34"}, "q43": {"2"}, "q45": {"10001"},
		"q110": {"1", "2"}}

	// CSRF: missing, wrong, another form's, from another site.
	for name, mutate := range map[string]func(url.Values, map[string]string){
		"missing": func(f url.Values, _ map[string]string) { f.Del("csrf") },
		"wrong":   func(f url.Values, _ map[string]string) { f.Set("csrf", strings.Repeat("0", 32)) },
		"other form": func(f url.Values, _ map[string]string) {
			f.Set("csrf", csrfOf(t, w.supportForm(o.Surveys[0].SupportURL)))
		},
		"cross site": func(_ url.Values, h map[string]string) { h["Sec-Fetch-Site"] = "cross-site" },
		"origin":     func(_ url.Values, h map[string]string) { h["Origin"] = "https://evil.test"; h["Sec-Fetch-Site"] = "" },
	} {
		f := url.Values{}
		for k, v := range good {
			f[k] = v
		}
		h := map[string]string{}
		mutate(f, h)
		r := w.page("POST", "/supply_api/v4/profile", f, h)
		if r.Status != 403 {
			t.Fatalf("%s CSRF: %d", name, r.Status)
		}
		expectPage(t, r, 403, "This form has expired")
	}
	if n := w.count(`SELECT count(*) FROM participants WHERE user_identifier = $1`, user); n != 0 {
		t.Fatal("a refused post impaneled")
	}

	// Validation: errors next to their fields, tied with aria-describedby, in a summary.
	bad := url.Values{"token": {token}, "csrf": {csrf}, "country": {"1"}, "q42": {"abc"}, "q45": {" "}, "q43": {"9"}, "q110": {"1"}}
	r = w.page("POST", "/supply_api/v4/profile", bad, nil)
	expectPage(t, r, 422, `<title>Error: Tell us about yourself</title>`, `class="error-summary" role="alert"`,
		`<a href="#q42">What is your age? — Enter your age in whole years, from 0 to 120.</a>`,
		`<a href="#q43-1">What is your gender? — Choose one of the answers.</a>`,
		`<a href="#q45">What is your ZIP code? — Answer this question.</a>`,
		`aria-invalid="true" aria-describedby="q42-error"`, `<p class="error" id="q42-error">`,
		`id="q43" aria-describedby="q43-hint q43-error"`, `value="abc"`,
		`type="checkbox" id="q110-1" name="q110" value="1" checked>`)
	r = w.page("POST", "/supply_api/v4/profile", url.Values{"token": {token}, "csrf": {csrf}, "country": {"1"},
		"q42": {"150"}, "q43": {"1"}, "q45": {"10001"}}, nil)
	expectPage(t, r, 422, "Enter your age in whole years")

	// Happy path: impaneled (write-through and panel), then back to the partner, signed.
	r = w.page("POST", "/supply_api/v4/profile", good, nil)
	u := expectSeeOther(t, r, w.partner.srv.URL+"/back?app=pq&status=profiled&reward=0&sech=")
	if !payout.VerifySech(u.RawQuery, w.pub.APISecret) {
		t.Fatalf("redirect %s is not signed", u)
	}
	if n := w.count(`SELECT count(*) FROM participants WHERE user_identifier = $1 AND country_id = 1
		AND profile->'42' IS NOT NULL AND profile->'110' IS NOT NULL`, user); n != 1 {
		t.Fatal("participant not stored with the profile")
	}
	// The participant is offered the real survey now (the cached profile answer is dropped).
	start := time.Now()
	w.waitOffer(user, campaignID)
	t.Logf("offered %v after profiling", time.Since(start))
	// Opening the profiler again shows the stored answers.
	r = w.page("GET", profileURL, nil, nil)
	expectPage(t, r, 200, `value="34"`, `type="radio" id="q43-2" name="q43" value="2" checked required>`)
}

// supportForm opens a support page and returns it.
func (w *world) supportForm(supportURL string) apptest.Response {
	w.t.Helper()
	r := w.page("GET", w.path(supportURL), nil, nil)
	expectPage(w.t, r, 200)
	return r
}

func TestPrescreenHTTP(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	campaignID, projectID := w.campaign("Car owners")
	questionID := w.screener(campaignID)
	plainID, _ := w.campaign("No screener")
	qname := "q" + strconv.Itoa(questionID)

	pass, fail := newUser(), newUser()
	w.impanel(pass)
	w.impanel(fail)

	// A campaign without screener questions enters at once.
	plain := w.waitOffer(pass, plainID)
	r := w.page("GET", w.path(plain.OfferEntryURL), nil, nil)
	if r.Status != 302 || !strings.HasPrefix(r.Header.Get("Location"), w.survey.srv.URL+"/s?tid=") {
		t.Fatalf("plain entry: %d %s", r.Status, r.Header.Get("Location"))
	}

	// The screener campaign's entry sends the participant to the pre-screener first.
	o := w.waitOffer(pass, campaignID)
	token := tokenOf(t, o.OfferEntryURL)
	sessions := func() int64 {
		return w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1`, campaignID)
	}
	r = w.page("GET", w.path(o.OfferEntryURL), nil, nil)
	if r.Status != 302 || r.Header.Get("Location") != w.s.PublicURL+"/router/prescreen?token="+token {
		t.Fatalf("entry: %d %s", r.Status, r.Header.Get("Location"))
	}
	if sessions() != 0 {
		t.Fatal("a session before the pre-screener")
	}

	// Token checks.
	expectPage(t, w.page("GET", "/router/prescreen", nil, nil), 403)
	expectPage(t, w.page("GET", "/router/prescreen?token="+forged(token), nil, nil), 403)
	key := w.s.App.Supply.Key()
	claims, _ := key.Verify(token, time.Now().Unix())
	old := claims
	old.Expires = time.Now().Unix() - 1
	expectPage(t, w.page("GET", "/router/prescreen?token="+key.Sign(old), nil, nil), 403)
	wrong := claims
	wrong.Kind = entrytoken.KindSupport
	expectPage(t, w.page("GET", "/router/prescreen?token="+key.Sign(wrong), nil, nil), 403)

	r = w.page("GET", "/router/prescreen?token="+token, nil, nil)
	expectPage(t, r, 200, `<html lang="en-US">`, "A few questions first", "<legend>Do you own a car?</legend>",
		`name="`+qname+`" value="1" required><label for="`+qname+`-1">Yes</label>`, `action="/router/prescreen"`)
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, w.survey.srv.URL) || !strings.Contains(csp, w.partner.srv.URL) {
		t.Fatalf("CSP %q does not admit the survey and the partner", csp)
	}
	csrf := csrfOf(t, r)

	// CSRF rejection, and no answer: 422.
	expectPage(t, w.page("POST", "/router/prescreen", url.Values{"token": {token}, qname: {"1"}}, nil), 403)
	expectPage(t, w.page("POST", "/router/prescreen", url.Values{"token": {token}, "csrf": {csrf}}, nil), 422,
		"Do you own a car? — Answer this question.", `aria-describedby="`+qname+`-hint `+qname+`-error"`)
	expectPage(t, w.page("POST", "/router/prescreen", url.Values{"token": {token}, "csrf": {csrf}, qname: {"7"}}, nil), 422,
		"Choose one of the answers.")

	// Pass: admitted, a session stored, on to the supplier link; the answers are the session's.
	r = w.page("POST", "/router/prescreen", url.Values{"token": {token}, "csrf": {csrf}, qname: {"1"}}, nil)
	u := expectSeeOther(t, r, w.survey.srv.URL+"/s?tid=")
	tid := u.Query().Get("tid")
	if n := w.count(`SELECT count(*) FROM sessions s JOIN screener_answers a ON a.session_id = s.id
		WHERE s.tid = $1 AND a.question_id = $2 AND a.pre_codes = '{1}'`, tid, questionID); n != 1 {
		t.Fatalf("screener answers of %s not stored", tid)
	}
	if n := w.count(`SELECT count(*) FROM prescreen_responses r JOIN sessions s ON s.id = r.session_id
		WHERE s.tid = $1 AND r.qualified`, tid); n != 1 {
		t.Fatal("qualified sheet not attached")
	}

	// Fail: back to the partner as disqualified, signed, and no session.
	fo := w.waitOffer(fail, campaignID)
	ftoken := tokenOf(t, fo.OfferEntryURL)
	r = w.page("GET", "/router/prescreen?token="+ftoken, nil, nil)
	fcsrf := csrfOf(t, r)
	before := sessions()
	r = w.page("POST", "/router/prescreen", url.Values{"token": {ftoken}, "csrf": {fcsrf}, qname: {"2"}}, nil)
	u = expectSeeOther(t, r, w.partner.srv.URL+"/back?app=pq&status=disqualified&reward=0&sech=")
	if !payout.VerifySech(u.RawQuery, w.pub.APISecret) || u.Query().Has("tid") {
		t.Fatalf("disqualified redirect %s", u)
	}
	if sessions() != before {
		t.Fatal("a disqualified participant got a session")
	}
	if n := w.count(`SELECT count(*) FROM prescreen_responses WHERE campaign_id = $1 AND NOT qualified AND session_id IS NULL
		AND answers = $2::jsonb`, campaignID, `{"`+strconv.Itoa(questionID)+`":[2]}`); n != 1 {
		t.Fatal("disqualifying sheet not recorded")
	}

	// The answers appear as tq_<question_id> in the insights results once complete.
	w.complete(tid)
	req := w.buyer.Request(t, "GET", "/insights_api/projects/"+strconv.FormatInt(projectID, 10)+"/campaigns/"+
		strconv.FormatInt(campaignID, 10), nil)
	req.Header.Set("Accept", "text/csv")
	res := w.s.Send(t, req).Expect(t, 200)
	rows, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("results CSV %v:\n%s", err, res.Body)
	}
	col := slices.Index(rows[0], "tq_"+strconv.Itoa(questionID))
	if col < 0 || rows[1][0] != tid || rows[1][col] != "Yes" {
		t.Fatalf("results CSV has no tq_%d answer Yes for %s:\n%s", questionID, tid, res.Body)
	}
}

func TestSupportHTTP(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	campaignID, _ := w.campaign("Support")
	user := newUser()

	// A profile session's support page.
	po := w.offers(user)
	r := w.page("GET", w.path(po.Surveys[0].SupportURL), nil, map[string]string{"Accept-Language": "fr-FR"})
	expectPage(t, r, 200, `<html lang="fr-FR">`, "Il vous a été demandé de compléter votre profil", "Puzzle Quest")

	w.impanel(user)
	o := w.waitOffer(user, campaignID)
	// Enter the survey so that the support page can list it.
	if r := w.page("GET", w.path(o.OfferEntryURL), nil, nil); r.Status != 302 {
		t.Fatalf("entry %d", r.Status)
	}
	token := tokenOf(t, o.SupportURL)
	expectPage(t, w.page("GET", "/support", nil, nil), 403)
	expectPage(t, w.page("GET", "/support?token="+forged(token), nil, nil), 403)
	expectPage(t, w.page("GET", "/support?token="+tokenOf(t, o.OfferEntryURL), nil, nil), 403)

	r = w.page("GET", w.path(o.SupportURL), nil, nil)
	campaign := strconv.FormatInt(campaignID, 10)
	expectPage(t, r, 200, `<html lang="en-US">`, "You were offered surveys in Puzzle Quest.", `<label class="field" for="message">`,
		`id="campaign-`+campaign+`" name="campaign" value="`+campaign+`"`, "Survey #"+campaign+", started ", `type="email"`)
	csrf := csrfOf(t, r)

	expectPage(t, w.page("POST", "/support", url.Values{"token": {token}, "message": {"hi"}}, nil), 403)
	r = w.page("POST", "/support", url.Values{"token": {token}, "csrf": {csrf}, "message": {"  "}, "email": {"not an email"},
		"campaign": {"999999"}}, nil)
	expectPage(t, r, 422, "Describe what happened", "Enter an email address like", "Choose one of the surveys listed.",
		`aria-describedby="message-hint message-error" aria-invalid="true"`)

	msg := "The survey stopped after the third page & I got no gems <b>"
	r = w.page("POST", "/support", url.Values{"token": {token}, "csrf": {csrf}, "message": {msg},
		"email": {"player@example.com"}, "campaign": {campaign}}, nil)
	u := expectSeeOther(t, r, "/support?token=")
	var id int64
	var kind, stored, email string
	var participant, cid *int64
	if err := w.s.DB.Pool.QueryRow(context.Background(), `SELECT id, session_kind, message, contact_email, participant_id, campaign_id
		FROM support_requests WHERE publisher_id = $1`, w.pub.ID).Scan(&id, &kind, &stored, &email, &participant, &cid); err != nil {
		t.Fatal(err)
	}
	if kind != "survey" || stored != msg || email != "player@example.com" || participant == nil || cid == nil || *cid != campaignID {
		t.Fatalf("stored request %v %q %q %v %v", kind, stored, email, participant, cid)
	}
	if u.Query().Get("sent") != strconv.FormatInt(id, 10) {
		t.Fatalf("confirmation %s", u)
	}
	r = w.page("GET", u.String(), nil, nil)
	expectPage(t, r, 200, "Message sent", "SR-"+strconv.FormatInt(id, 10))
	// Another token cannot read the confirmation.
	r = w.page("GET", w.path(w.offers(user).Surveys[0].SupportURL)+"&sent="+strconv.FormatInt(id, 10), nil, nil)
	expectPage(t, r, 200, "What happened?")

	// At most 5 requests from one token.
	for i := 0; i < 5; i++ {
		r = w.page("POST", "/support", url.Values{"token": {token}, "csrf": {csrf}, "message": {"again"}}, nil)
	}
	expectPage(t, r, 429, "Too many messages")
}
