package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
)

// consoleClient is one browser's view of the console over plain HTTP: it keeps the cookies
// the server sets and sends them back, and posts forms like a browser on this site.
type consoleClient struct {
	w       *world
	cookies map[string]*http.Cookie
}

func (w *world) console() *consoleClient {
	return &consoleClient{w: w, cookies: map[string]*http.Cookie{}}
}

// do sends a request; form, when not nil, is posted. header overrides (or with "" removes)
// request headers.
func (c *consoleClient) do(method, path string, form url.Values, header map[string]string) apptest.Response {
	c.w.t.Helper()
	var parts []string
	for _, ck := range c.cookies {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	h := map[string]string{"Cookie": strings.Join(parts, "; ")}
	for k, v := range header {
		h[k] = v
	}
	r := c.w.page(method, path, form, h)
	for _, ck := range (&http.Response{Header: r.Header}).Cookies() {
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	return r
}

// signIn signs in through the form with email and token and returns the answer.
func (c *consoleClient) signIn(email, token string) apptest.Response {
	c.w.t.Helper()
	form := c.do("GET", "/console/sign-in", nil, nil)
	expectConsolePage(c.w.t, form, http.StatusOK, `name="token"`)
	return c.do("POST", "/console/sign-in", url.Values{"csrf": {csrfOf(c.w.t, form)}, "email": {email}, "token": {token}}, nil)
}

// csrf is the CSRF value of a signed-in page.
func (c *consoleClient) csrf() string {
	c.w.t.Helper()
	return csrfOf(c.w.t, c.do("GET", "/console/campaigns", nil, nil))
}

// expectConsolePage checks a console page: status, the console's strict CSP, the security
// headers, no script and no style attribute, and what it must contain.
func expectConsolePage(t testing.TB, r apptest.Response, status int, contains ...string) {
	t.Helper()
	r.Expect(t, status)
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	want := "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	if csp := r.Header.Get("Content-Security-Policy"); csp != want {
		t.Fatalf("CSP %q", csp)
	}
	if r.Header.Get("X-Frame-Options") != "DENY" || r.Header.Get("Cache-Control") != "no-store" ||
		r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("security headers %v", r.Header)
	}
	body := string(r.Body)
	if strings.Contains(body, "<script") || strings.Contains(body, " style=") || strings.Contains(body, "<style") {
		t.Fatalf("page has a script or inline style")
	}
	for _, s := range contains {
		if !strings.Contains(body, s) {
			t.Fatalf("page (%d) lacks %q:\n%s", r.Status, s, body)
		}
	}
}

func TestConsoleSignInHTTP(t *testing.T) {
	w := newWorld(t)
	id, _ := w.campaign("Streaming habits")

	t.Run("signed out: sent to sign-in", func(t *testing.T) {
		for _, p := range []string{"/console/campaigns", fmt.Sprintf("/console/campaigns/%d", id), "/console"} {
			r := w.console().do("GET", p, nil, nil)
			if p == "/console" {
				expectSeeOther(t, r, "/console/campaigns")
				continue
			}
			expectSeeOther(t, r, "/console/sign-in")
		}
	})

	t.Run("wrong token refused", func(t *testing.T) {
		for _, cred := range [][2]string{{w.buyer.Email, forged(w.buyer.Token)}, {"other@example.com", w.buyer.Token}, {w.buyer.Email, ""}} {
			c := w.console()
			r := c.signIn(cred[0], cred[1])
			expectConsolePage(t, r, http.StatusUnauthorized, "is wrong", `aria-invalid="true"`)
			if c.cookies["sb_console"] != nil {
				t.Fatal("a session cookie after a refused sign-in")
			}
			expectSeeOther(t, c.do("GET", "/console/campaigns", nil, nil), "/console/sign-in")
		}
	})

	t.Run("cookie flags", func(t *testing.T) {
		c := w.console()
		expectSeeOther(t, c.signIn(w.buyer.Email, w.buyer.Token), "/console/campaigns")
		ck := c.cookies["sb_console"]
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/console" || ck.Secure ||
			ck.MaxAge <= 0 || ck.MaxAge > 8*3600 || len(ck.Value) != 64 {
			t.Fatalf("session cookie %+v", ck)
		}
		// The database keeps only a hash of the session id.
		if n := w.count(`SELECT count(*) FROM console_sessions WHERE id_hash = convert_to($1::text, 'UTF8') OR encode(id_hash, 'hex') = $1`, ck.Value); n != 0 {
			t.Fatal("the session id is stored as is")
		}
		expectConsolePage(t, c.do("GET", "/console/campaigns", nil, nil), http.StatusOK, "Streaming habits", w.buyer.Email)
	})

	t.Run("CSRF", func(t *testing.T) {
		// The sign-in form without its CSRF value, or with another browser's.
		c := w.console()
		c.do("GET", "/console/sign-in", nil, nil)
		expectConsolePage(t, c.do("POST", "/console/sign-in", url.Values{"email": {w.buyer.Email}, "token": {w.buyer.Token}}, nil),
			http.StatusForbidden, "expired")
		other := w.console()
		otherForm := other.do("GET", "/console/sign-in", nil, nil)
		expectConsolePage(t, c.do("POST", "/console/sign-in", url.Values{"csrf": {csrfOf(t, otherForm)}, "email": {w.buyer.Email},
			"token": {w.buyer.Token}}, nil), http.StatusForbidden, "expired")

		// An action without the session's CSRF value, with another session's, or from
		// another site changes nothing.
		c = w.console()
		c.signIn(w.buyer.Email, w.buyer.Token)
		good := c.csrf()
		other.signIn(w.buyer.Email, w.buyer.Token)
		path := fmt.Sprintf("/console/campaigns/%d/status", id)
		for name, try := range map[string]func() apptest.Response{
			"none": func() apptest.Response { return c.do("POST", path, url.Values{"status": {"pause"}}, nil) },
			"other's": func() apptest.Response {
				return c.do("POST", path, url.Values{"status": {"pause"}, "csrf": {other.csrf()}}, nil)
			},
			"cross-site": func() apptest.Response {
				return c.do("POST", path, url.Values{"status": {"pause"}, "csrf": {good}}, map[string]string{"Sec-Fetch-Site": "cross-site"})
			},
		} {
			expectConsolePage(t, try(), http.StatusForbidden, "expired")
			if s := w.count(`SELECT status FROM campaigns WHERE id = $1`, id); s != 2 {
				t.Fatalf("%s: status %d after a forged post", name, s)
			}
		}
		// Sign-out needs it too.
		expectConsolePage(t, c.do("POST", "/console/sign-out", url.Values{}, nil), http.StatusForbidden, "expired")
		expectConsolePage(t, c.do("GET", "/console/campaigns", nil, nil), http.StatusOK)
	})

	t.Run("session expiry and sign-out", func(t *testing.T) {
		c := w.console()
		c.signIn(w.buyer.Email, w.buyer.Token)
		expectConsolePage(t, c.do("GET", "/console/campaigns", nil, nil), http.StatusOK)
		ck := c.cookies["sb_console"]
		if _, err := w.s.DB.Pool.Exec(context.Background(),
			`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE expires_at > now()
			 AND created_at = (SELECT max(created_at) FROM console_sessions)`); err != nil {
			t.Fatal(err)
		}
		expectSeeOther(t, c.do("GET", "/console/campaigns", nil, nil), "/console/sign-in")

		c = w.console()
		c.signIn(w.buyer.Email, w.buyer.Token)
		expectSeeOther(t, c.do("POST", "/console/sign-out", url.Values{"csrf": {c.csrf()}}, nil), "/console/sign-in")
		if c.cookies["sb_console"] != nil {
			t.Fatal("sign-out left the cookie")
		}
		c.cookies["sb_console"] = ck // the old value, replayed
		expectSeeOther(t, c.do("GET", "/console/campaigns", nil, nil), "/console/sign-in")
	})

	t.Run("revoking the token ends its sessions", func(t *testing.T) {
		ctx := context.Background()
		_, second, err := w.s.DB.Accounts.IssueBuyerToken(ctx, w.buyer.Email, w.s.Env)
		if err != nil {
			t.Fatal(err)
		}
		keep, gone := w.console(), w.console()
		keep.signIn(w.buyer.Email, w.buyer.Token)
		expectSeeOther(t, gone.signIn(w.buyer.Email, second), "/console/campaigns")
		expectConsolePage(t, gone.do("GET", "/console/campaigns", nil, nil), http.StatusOK)
		if err := w.s.DB.Accounts.RevokeBuyerToken(ctx, w.buyer.Email, second); err != nil {
			t.Fatal(err)
		}
		expectSeeOther(t, gone.do("GET", "/console/campaigns", nil, nil), "/console/sign-in")
		expectConsolePage(t, keep.do("GET", "/console/campaigns", nil, nil), http.StatusOK)
	})
}

func TestConsoleIsolationHTTP(t *testing.T) {
	w := newWorld(t)
	mine, _ := w.campaign("Mine only")
	other := w.s.NewBuyer(t)
	otherWorld := &world{t: t, s: w.s, buyer: other, survey: w.survey}
	theirs, _ := otherWorld.campaign("Theirs only")

	c := w.console()
	expectSeeOther(t, c.signIn(w.buyer.Email, w.buyer.Token), "/console/campaigns")
	list := c.do("GET", "/console/campaigns", nil, nil)
	expectConsolePage(t, list, http.StatusOK, "Mine only")
	if strings.Contains(string(list.Body), "Theirs only") {
		t.Fatal("another buyer's campaign is listed")
	}
	expectConsolePage(t, c.do("GET", fmt.Sprintf("/console/campaigns/%d", mine), nil, nil), http.StatusOK, "Mine only")
	for _, p := range []string{"", "/completes.csv", "/outcomes.csv"} {
		r := c.do("GET", fmt.Sprintf("/console/campaigns/%d%s", theirs, p), nil, nil)
		expectConsolePage(t, r, http.StatusNotFound, "Not found")
		if strings.Contains(string(r.Body), "Theirs only") {
			t.Fatal("another buyer's campaign is shown")
		}
	}
	csrf := c.csrf()
	expectConsolePage(t, c.do("POST", fmt.Sprintf("/console/campaigns/%d/status", theirs), url.Values{"csrf": {csrf}, "status": {"pause"}}, nil),
		http.StatusNotFound)
	var quota int64
	if err := w.s.DB.Pool.QueryRow(context.Background(), `SELECT id FROM campaign_quotas WHERE campaign_id = $1`, theirs).Scan(&quota); err != nil {
		t.Fatal(err)
	}
	expectConsolePage(t, c.do("POST", fmt.Sprintf("/console/campaigns/%d/quotas/%d", theirs, quota),
		url.Values{"csrf": {csrf}, "num_respondents": {"5"}}, nil), http.StatusNotFound)
	if s := w.count(`SELECT status FROM campaigns WHERE id = $1`, theirs); s != 2 {
		t.Fatalf("another buyer's campaign changed: status %d", s)
	}
	if n := w.count(`SELECT num_respondents FROM campaign_quotas WHERE id = $1`, quota); n != 100 {
		t.Fatalf("another buyer's quota changed: %d", n)
	}
}

func TestConsoleActionsHTTP(t *testing.T) {
	w := newWorld(t)
	id, _ := w.campaign("Actions")
	c := w.console()
	c.signIn(w.buyer.Email, w.buyer.Token)
	page := c.do("GET", fmt.Sprintf("/console/campaigns/%d", id), nil, nil)
	expectConsolePage(t, page, http.StatusOK, "0 of 100 completes", `id="pause"`, "<svg", "<title>Completes per day against even pacing</title>",
		"<desc>", "completes.csv", "outcomes.csv")
	csrf := csrfOf(t, page)
	var quota int64
	if err := w.s.DB.Pool.QueryRow(context.Background(), `SELECT id FROM campaign_quotas WHERE campaign_id = $1`, id).Scan(&quota); err != nil {
		t.Fatal(err)
	}
	post := func(path string, form url.Values) apptest.Response {
		form.Set("csrf", csrf)
		return c.do("POST", fmt.Sprintf("/console/campaigns/%d%s", id, path), form, nil)
	}
	for _, tc := range []struct {
		status string
		want   int64
	}{{"pause", 5}, {"activate", 2}, {"pause", 5}, {"complete", 3}} {
		expectSeeOther(t, post("/status", url.Values{"status": {tc.status}}), fmt.Sprintf("/console/campaigns/%d?done=", id))
		if s := w.count(`SELECT status FROM campaigns WHERE id = $1`, id); s != tc.want {
			t.Fatalf("%s: status %d, want %d", tc.status, s, tc.want)
		}
	}
	// Only the three actions; the API's own rules answer the rest (a campaign without quota
	// cannot be activated).
	post("/status", url.Values{"status": {"activate"}}).Expect(t, http.StatusSeeOther)
	bare, _ := w.campaign("No quota")
	if _, err := w.s.DB.Pool.Exec(context.Background(), `DELETE FROM campaign_quotas WHERE campaign_id = $1`, bare); err != nil {
		t.Fatal(err)
	}
	c.do("POST", fmt.Sprintf("/console/campaigns/%d/status", bare), url.Values{"csrf": {csrf}, "status": {"pause"}}, nil).Expect(t, http.StatusSeeOther)
	expectConsolePage(t, c.do("POST", fmt.Sprintf("/console/campaigns/%d/status", bare), url.Values{"csrf": {csrf}, "status": {"activate"}}, nil),
		http.StatusUnprocessableEntity, "status cannot be 2 (active): the campaign has no quota")
	expectConsolePage(t, post("/status", url.Values{"status": {"archive"}}), http.StatusUnprocessableEntity, "status")

	// The quota target, validated as PUT .../campaign_quotas/{id} validates it.
	for _, bad := range []string{"0", "-3", "x", "99999999999"} {
		expectConsolePage(t, post(fmt.Sprintf("/quotas/%d", quota), url.Values{"num_respondents": {bad}}), http.StatusUnprocessableEntity,
			"num_respondents")
	}
	expectSeeOther(t, post(fmt.Sprintf("/quotas/%d", quota), url.Values{"num_respondents": {"250"}}), "/console/campaigns/")
	got := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas/%d", id, quota), nil).Expect(t, 200).Object(t)
	if got["num_respondents"] != float64(250) {
		t.Fatalf("quota after the console's change: %v", got)
	}
	expectConsolePage(t, c.do("GET", fmt.Sprintf("/console/campaigns/%d?done=quota", id), nil, nil), http.StatusOK,
		"Quota target changed.", "0 of 250 completes")

	csvr := c.do("GET", fmt.Sprintf("/console/campaigns/%d/completes.csv", id), nil, nil).Expect(t, 200)
	if ct := csvr.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(string(csvr.Body), "day,completes,cumulative_completes,even_pacing_target\n") {
		t.Fatalf("CSV %q: %s", ct, csvr.Body)
	}
}

func TestConsoleOperatorHTTP(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	op, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Olive")
	if err != nil {
		t.Fatal(err)
	}
	if op.ID == 0 || len(token) != 48 {
		t.Fatalf("operator %+v, token %q", op, token)
	}
	if n := w.count(`SELECT count(*) FROM operators WHERE token_hash = sha256(convert_to($1::text, 'UTF8'))`, token); n != 1 {
		t.Fatal("the operator token's hash is not what is stored")
	}

	// Traffic to total: a complete through the real entry and callback.
	player := newUser()
	w.impanel(player)
	id, _ := w.campaign("Totals")
	w.complete(w.enter(player, id))

	// No session, or a buyer's: sent to the operator sign-in.
	buyer := w.console()
	buyer.signIn(w.buyer.Email, w.buyer.Token)
	for _, c := range []*consoleClient{w.console(), buyer} {
		for _, p := range []string{"/console/operator", "/console/operator/market.csv", "/console/operator/partners.csv"} {
			expectSeeOther(t, c.do("GET", p, nil, nil), "/console/operator/sign-in")
		}
	}
	// The numbers behind the buyer's charts.
	today := time.Now().UTC().Format("2006-01-02")
	completes := buyer.do("GET", fmt.Sprintf("/console/campaigns/%d/completes.csv", id), nil, nil).Expect(t, 200)
	if !strings.Contains(string(completes.Body), "\n"+today+",1,1,20\n") {
		t.Fatalf("completes CSV (target 100 over 5 days: 20 a day):\n%s", completes.Body)
	}
	outcomes := buyer.do("GET", fmt.Sprintf("/console/campaigns/%d/outcomes.csv", id), nil, nil).Expect(t, 200)
	if string(outcomes.Body) != "outcome,entries\ncomplete,1\n" {
		t.Fatalf("outcomes CSV:\n%s", outcomes.Body)
	}

	// A buyer's token is no operator token.
	c := w.console()
	form := c.do("GET", "/console/operator/sign-in", nil, nil)
	expectConsolePage(t, c.do("POST", "/console/operator/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "token": {w.buyer.Token}}, nil),
		http.StatusUnauthorized, "wrong")
	form = c.do("GET", "/console/operator/sign-in", nil, nil)
	expectSeeOther(t, c.do("POST", "/console/operator/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "token": {token}}, nil), "/console/operator")
	expectConsolePage(t, c.do("GET", "/console/operator", nil, nil), http.StatusOK, "Ops Olive", "Snapshot age", "Puzzle Quest",
		"<title>Offers, entries and completes per day</title>", "market.csv", `id="backlog"`, "<td>1</td><td>1</td><td>$2.00</td>")
	partners := c.do("GET", "/console/operator/partners.csv", nil, nil).Expect(t, 200)
	if !strings.Contains(string(partners.Body), ",Puzzle Quest,1,1,0,0,100.0%,") {
		t.Fatalf("partners CSV:\n%s", partners.Body)
	}
	// An operator's session is no buyer's.
	expectSeeOther(t, c.do("GET", "/console/campaigns", nil, nil), "/console/sign-in")
	c.do("GET", "/console/operator/market.csv", nil, nil).Expect(t, 200)
	csrf := csrfOf(t, c.do("GET", "/console/operator", nil, nil))
	expectSeeOther(t, c.do("POST", "/console/sign-out", url.Values{"csrf": {csrf}, "view": {"operator"}}, nil), "/console/operator/sign-in")
	expectSeeOther(t, c.do("GET", "/console/operator", nil, nil), "/console/operator/sign-in")
}

// TestConsoleOperatorOffersHTTP: the GET /campaigns answers a partner got, once flushed,
// are the offers of the operator's market totals (table, CSV) and of the partner's row, which
// turns them into entries per offer.
func TestConsoleOperatorOffersHTTP(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Otto")
	if err != nil {
		t.Fatal(err)
	}
	player := newUser()
	w.impanel(player)
	id, _ := w.campaign("Offered")
	w.complete(w.enter(player, id)) // one entry, one complete (after at least one answer)
	for range 3 {
		w.offers(player)
	}
	if err := w.s.App.Supply.FlushOffers(ctx); err != nil {
		t.Fatal(err)
	}
	offers := w.count(`SELECT COALESCE(sum(offers), 0)::bigint FROM publisher_offer_hours WHERE publisher_id = $1`, w.pub.ID)
	if offers < 4 {
		t.Fatalf("%d offers flushed after at least 4 answers", offers)
	}
	n := strconv.FormatInt(offers, 10)
	perOffer := strconv.FormatFloat(100/float64(offers), 'f', 1, 64) + "%"

	c := w.console()
	form := c.do("GET", "/console/operator/sign-in", nil, nil)
	expectSeeOther(t, c.do("POST", "/console/operator/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "token": {token}}, nil), "/console/operator")
	today := time.Now().UTC().Format("2006-01-02")
	expectConsolePage(t, c.do("GET", "/console/operator", nil, nil), http.StatusOK,
		`<th scope="col">Offers</th><th scope="col">Entries</th><th scope="col">Completes</th>`,
		"<tr><th scope=\"row\">"+today+"</th><td>"+n+"</td><td>1</td><td>1</td><td>$2.00</td><td>$1.0000</td><td>0</td><td>$0.0000</td></tr>",
		`<span class="opt">#`+strconv.FormatInt(w.pub.ID, 10)+`</span></th><td>`+n+`</td><td>1</td><td>`+perOffer+`</td><td>1</td><td>0</td><td>100.0%</td>`,
		`<circle cx=`)
	market := string(c.do("GET", "/console/operator/market.csv", nil, nil).Expect(t, 200).Body)
	if !strings.HasPrefix(market, "day,entries,completes,revenue_usd,partner_payout_usd,offers,overages,overage_payout_usd\n") ||
		!strings.Contains(market, "\n"+today+",1,1,2.00,") || !strings.HasSuffix(market, ","+n+",0,0.0000\n") {
		t.Fatalf("market CSV (%s offers):\n%s", n, market)
	}
	partners := string(c.do("GET", "/console/operator/partners.csv", nil, nil).Expect(t, 200).Body)
	if !strings.HasPrefix(partners, "publisher_id,name,entries,completes,terminations,rejected,conversion,offers,entries_per_offer\n") ||
		!strings.Contains(partners, ",Puzzle Quest,1,1,0,0,100.0%,"+n+","+perOffer+"\n") {
		t.Fatalf("partners CSV (%s offers):\n%s", n, partners)
	}
}

// TestConsoleOperatorEntriesPerOfferHTTP: while the offers behind a partner's entries are
// not written yet (each process writes its count about once a minute; here once an hour, or
// when asked), the operator's partner row and CSV give no entries per offer, not a ratio
// over the offers written earlier; once the offers are written, they give it.
func TestConsoleOperatorEntriesPerOfferHTTP(t *testing.T) {
	w := newWorld(t, func(c *app.Config) { c.Supply.OfferFlush = time.Hour })
	ctx := context.Background()
	_, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Ona")
	if err != nil {
		t.Fatal(err)
	}
	// One offer written three hours ago; three entries now, from offers counted in memory.
	if err := w.s.DB.Insights.AddPublisherOffers(ctx, []persistence.OfferHour{{Publisher: w.pub.ID,
		Hour: time.Now().Add(-3 * time.Hour), Offers: 1}}); err != nil {
		t.Fatal(err)
	}
	id, _ := w.campaign("Entered")
	for range 3 {
		player := newUser()
		w.impanel(player)
		w.enter(player, id)
	}
	c := w.console()
	form := c.do("GET", "/console/operator/sign-in", nil, nil)
	expectSeeOther(t, c.do("POST", "/console/operator/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "token": {token}}, nil), "/console/operator")
	row := `<span class="opt">#` + strconv.FormatInt(w.pub.ID, 10) + `</span></th><td>`
	expectConsolePage(t, c.do("GET", "/console/operator", nil, nil), http.StatusOK, row+`1</td><td>3</td><td>–</td>`)
	if partners := string(c.do("GET", "/console/operator/partners.csv", nil, nil).Expect(t, 200).Body); !strings.Contains(partners, ",1,–\n") {
		t.Fatalf("partners CSV before the offers are written:\n%s", partners)
	}

	if err := w.s.App.Supply.FlushOffers(ctx); err != nil {
		t.Fatal(err)
	}
	offers := w.count(`SELECT COALESCE(sum(offers), 0)::bigint FROM publisher_offer_hours WHERE publisher_id = $1`, w.pub.ID)
	if offers < 4 {
		t.Fatalf("%d offers written after at least 3 answers", offers)
	}
	perOffer := strconv.FormatFloat(300/float64(offers), 'f', 1, 64) + "%"
	expectConsolePage(t, c.do("GET", "/console/operator", nil, nil), http.StatusOK,
		row+strconv.FormatInt(offers, 10)+`</td><td>3</td><td>`+perOffer+`</td>`)
}

// TestConsoleOperatorProcessesHTTP: every serve process sharing the database writes a
// heartbeat the operator page lists, the serving one marked; a row without a heartbeat for
// over a minute is shown as stale and kept; a process shut down cleanly deletes its row.
func TestConsoleOperatorProcessesHTTP(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	_, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Ida")
	if err != nil {
		t.Fatal(err)
	}
	addrOf := func(s *apptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	var second *apptest.Server
	// Runs after the second app's own cleanup (registered later, run earlier): its row is gone.
	t.Cleanup(func() {
		if second != nil && !t.Failed() {
			if n := w.count(`SELECT count(*) FROM serve_processes WHERE addr = $1`, addrOf(second)); n != 0 {
				t.Errorf("%d heartbeat rows left by a clean shutdown", n)
			}
		}
	})
	second = apptest.Start(t, apptest.Options{RateLimit: -1, DatabaseURL: w.s.DB.Pool.Config().ConnString()})
	idOf := func(s *apptest.Server) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var id string
			err := w.s.DB.Pool.QueryRow(ctx, `SELECT id FROM serve_processes WHERE addr = $1`, addrOf(s)).Scan(&id)
			if err == nil {
				return id
			}
			if time.Now().After(deadline) {
				t.Fatalf("no heartbeat of %s: %v", addrOf(s), err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first, other := idOf(w.s), idOf(second)
	// A process that died two minutes ago without deleting its row.
	if err := w.s.DB.Maintenance.BeatProcess(ctx, persistence.ServeProcess{ID: "gone-42", Addr: "10.0.0.9:8080", Version: "v0.9",
		StartedAt: time.Now().Add(-time.Hour), SnapshotAt: time.Now().Add(-3 * time.Minute), Campaigns: 7, Participants: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.DB.Pool.Exec(ctx, `UPDATE serve_processes SET updated_at = now() - interval '2 minutes' WHERE id = 'gone-42'`); err != nil {
		t.Fatal(err)
	}

	c := w.console()
	form := c.do("GET", "/console/operator/sign-in", nil, nil)
	expectSeeOther(t, c.do("POST", "/console/operator/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "token": {token}}, nil), "/console/operator")
	page := c.do("GET", "/console/operator", nil, nil)
	expectConsolePage(t, page, http.StatusOK, `id="processes"`,
		`<tr id="process-`+first+`"><th scope="row">`+first+` <span class="opt">(this process)</span></th><td>`+addrOf(w.s)+`</td>`,
		`<tr id="process-`+other+`"><th scope="row">`+other+`</th><td>`+addrOf(second)+`</td>`,
		`<tr id="process-gone-42"><th scope="row">gone-42</th><td>10.0.0.9:8080</td><td>v0.9</td>`,
		`<td>7</td><td>3</td><td><strong class="stale">stale</strong>, 2m`)
	body := string(page.Body)
	for _, id := range []string{first, other} {
		row := body[strings.Index(body, `<tr id="process-`+id+`">`):]
		row = row[:strings.Index(row, "</tr>")]
		if strings.Contains(row, "stale") || strings.Contains(row, "not loaded") {
			t.Fatalf("live process shown stale or unloaded: %s", row)
		}
	}
	// Readers keep stale rows.
	if n := w.count(`SELECT count(*) FROM serve_processes`); n != 3 {
		t.Fatalf("%d heartbeat rows after a read", n)
	}
}

// TestConsoleHTTPSAndFailures: under an https public URL the session cookie is Secure; a
// client that keeps failing to sign in is refused (429) before its credentials are checked,
// even right ones, by the limit the API shares.
func TestConsoleHTTPSAndFailures(t *testing.T) {
	w := &world{t: t, s: apptest.Start(t, apptest.Options{RateLimit: -1, PublicURL: "https://console.example.test",
		AuthFailRate: 0.01, AuthFailBurst: 3})}
	w.buyer = w.s.NewBuyer(t)
	c := w.console()
	expectSeeOther(t, c.signIn(w.buyer.Email, w.buyer.Token), "/console/campaigns")
	if ck := c.cookies["sb_console"]; ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v", ck)
	}
	for range 3 {
		expectConsolePage(t, w.console().signIn(w.buyer.Email, forged(w.buyer.Token)), http.StatusUnauthorized, "is wrong")
	}
	r := w.console().signIn(w.buyer.Email, w.buyer.Token)
	expectConsolePage(t, r, http.StatusTooManyRequests, "Too many attempts")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// The buyer API shares the limit.
	req := w.s.NewRequest(t, "GET", "/api/v1/campaigns", nil)
	req.SetBasicAuth(w.buyer.Email, forged(w.buyer.Token))
	w.s.Send(t, req).Expect(t, http.StatusTooManyRequests)
}
