package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// consoleLayout checks a console page on the phone: its stylesheet loaded (style-src
// 'self'), nothing wider than the screen, every control labelled, touch targets of 44 px.
func (tb *tab) consoleLayout() {
	tb.t.Helper()
	if bg := tb.str(`getComputedStyle(document.body).backgroundColor`); bg != "rgb(244, 245, 247)" {
		tb.t.Fatalf("stylesheet not applied: body background %q at %s", bg, tb.location())
	}
	if w := tb.num(`document.documentElement.scrollWidth`); w > phoneWidth {
		tb.t.Fatalf("page is %v px wide on a %d px screen", w, phoneWidth)
	}
	if n := tb.num(`[...document.querySelectorAll("input:not([type=hidden]),textarea,select,progress")].filter(e => !e.labels || e.labels.length == 0).length`); n != 0 {
		tb.t.Fatalf("%v controls without a label", n)
	}
	if n := tb.num(`[...document.querySelectorAll("button")].filter(e => e.getBoundingClientRect().height < 44).length`); n != 0 {
		tb.t.Fatalf("%v buttons under 44 px high", n)
	}
}

// fieldStyle is a JavaScript function of an element giving what draws it as a text field:
// its box, borders, padding, font and colours, as computed.
const fieldStyle = `e => { const s = getComputedStyle(e); return ["display", "boxSizing", "width", "minHeight",
	"borderTopWidth", "borderTopStyle", "borderTopColor", "borderRightWidth", "borderRightStyle", "borderRightColor",
	"borderBottomWidth", "borderBottomStyle", "borderBottomColor", "borderLeftWidth", "borderLeftStyle", "borderLeftColor",
	"borderTopLeftRadius", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft",
	"fontFamily", "fontSize", "fontWeight", "lineHeight", "color", "backgroundColor"].map(p => p + ": " + s[p]).join("; ") }`

// styledAsText fails unless the field sel (not focused) is drawn as the stylesheet draws a
// text input: one put beside it has the same computed style.
func (tb *tab) styledAsText(sel string) {
	tb.t.Helper()
	if diff := tb.str(`(() => { const f = document.querySelector(` + strconv.Quote(sel) + `), t = document.createElement("input");
		t.type = "text"; f.after(t); const style = ` + fieldStyle + `; const a = style(f), b = style(t); t.remove();
		return a === b ? "" : "field: " + a + "\ntext:  " + b })()`); diff != "" {
		tb.t.Fatalf("%s is not drawn as a text input:\n%s", sel, diff)
	}
}

// barColor is the colour of the bar labelled label in the page's drop-off chart ("": none).
func (tb *tab) barColor(label string) string {
	tb.t.Helper()
	return tb.str(`(() => { const t = [...document.querySelectorAll("#dropoff-h ~ figure svg text")].find(e => e.textContent === ` +
		strconv.Quote(label) + `); return t ? getComputedStyle(t.nextElementSibling).fill : "" })()`)
}

// chartDay is what a chart of the page shows on a date axis: its x tick labels with their
// x, and the x and on-screen width of the marks of the series named series.
type chartDay struct {
	Labels []string
	X      []float64 // of Labels
	Marks  []float64 // x of every point drawn (dots, and a line's points)
	Widths []float64 // on-screen width of each dot
}

func (tb *tab) chartDay(svg, series string) chartDay {
	tb.t.Helper()
	js := `(() => { const svg = document.querySelector(` + strconv.Quote(svg) + `), texts = [...svg.querySelectorAll("text")];
		const ticks = texts.filter(e => e.getAttribute("y") === "380.0");
		const color = texts.find(e => e.textContent === ` + strconv.Quote(series) + `).previousElementSibling.getAttribute("stroke");
		const marks = [...svg.querySelectorAll("polyline, circle")].filter(e => (e.getAttribute("stroke") || e.getAttribute("fill")) === color);
		return JSON.stringify({Labels: ticks.map(e => e.textContent), X: ticks.map(e => +e.getAttribute("x")),
			Marks: marks.flatMap(e => e.tagName === "circle" ? [+e.getAttribute("cx")] : e.getAttribute("points").split(" ").map(p => +p.split(",")[0])),
			Widths: marks.filter(e => e.tagName === "circle").map(e => e.getBoundingClientRect().width)}) })()`
	var d chartDay
	if err := json.Unmarshal([]byte(tb.str(js)), &d); err != nil {
		tb.t.Fatal(err)
	}
	return d
}

// enter takes user into campaign id's survey through the offer's entry link, as a partner's
// app would, and returns the session's tid.
func (w *world) enter(user string, id int64) string {
	w.t.Helper()
	o := w.waitOffer(user, id)
	resp, err := w.s.Client.Get(o.OfferEntryURL)
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Query().Get("tid") == "" {
		w.t.Fatalf("entry: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("tid")
}

func TestConsoleBrowser(t *testing.T) {
	requireChromium(t)
	w := newWorld(t)
	b := startBrowser(t)
	id, _ := w.campaign("Streaming habits")
	campaignURL := fmt.Sprintf("%s/console/campaigns/%d", w.s.PublicURL, id)

	// A second campaign whose entries end otherwise first: two still in the survey, one complete.
	second, _ := w.campaign("Car-free commuters")
	for i := range 3 {
		player := newUser()
		w.impanel(player)
		tid := w.enter(player, second)
		if i == 0 {
			w.complete(tid)
		}
	}
	today := time.Now().UTC().Format("Jan 2")

	t.Run("buyer", func(t *testing.T) {
		tb := b.tab(t)
		tb.navigates(w.s.PublicURL+"/console/sign-in", chromedp.Navigate(w.s.PublicURL+"/console"))
		tb.consoleLayout()
		tb.styledAsText("#email")
		tb.styledAsText("#token")
		tb.shot("console-sign-in")

		// Keyboard only: the skip link, the e-mail, the token, Enter submits.
		active := func() string {
			return tb.str(`document.activeElement.id || document.activeElement.className || document.activeElement.tagName`)
		}
		tb.do(chromedp.KeyEvent(kb.Tab))
		if a := active(); a != "skip" {
			t.Fatalf("first tab stop %q, want the skip link", a)
		}
		tb.do(chromedp.KeyEvent(kb.Tab))
		if a := active(); a != "email" {
			t.Fatalf("second tab stop %q, want the e-mail", a)
		}
		tb.do(chromedp.KeyEvent(w.buyer.Email), chromedp.KeyEvent(kb.Tab))
		if a := active(); a != "token" {
			t.Fatalf("third tab stop %q, want the token", a)
		}
		if s := tb.str(`getComputedStyle(document.activeElement).outlineStyle`); s != "solid" {
			t.Fatalf("no visible focus on the token field (outline %q)", s)
		}
		tb.navigates(w.s.PublicURL+"/console/campaigns", chromedp.KeyEvent(w.buyer.Token), chromedp.KeyEvent(kb.Enter))
		tb.consoleLayout()
		if n := tb.num(fmt.Sprintf(`document.querySelector("#fill-%d").value`, id)); n != 0 {
			t.Fatalf("campaign list fill %v before any complete", n)
		}

		// A complete through the real entry link and the buyer's signed callback.
		player := newUser()
		w.impanel(player)
		w.complete(w.enter(player, id))
		tb.navigates(w.s.PublicURL+"/console/campaigns", chromedp.Navigate(w.s.PublicURL+"/console/campaigns"))
		if n := tb.num(fmt.Sprintf(`document.querySelector("#fill-%d").value`, id)); n != 1 {
			t.Fatalf("campaign list fill %v after one complete", n)
		}
		tb.shot("console-campaigns")
		tb.navigates(campaignURL, chromedp.Click(chromedp.CSS(fmt.Sprintf("#campaign-%d", id))))
		tb.consoleLayout()
		if v := tb.str(`(() => { const p = document.querySelector("progress[id^=quota-fill]"); return p.value + "/" + p.max })()`); v != "1/100" {
			t.Fatalf("quota fill %s, want 1/100", v)
		}
		if n := tb.num(`document.querySelectorAll("svg[role=img] > title + desc").length`); n != 2 {
			t.Fatalf("%v charts with a title and a description, want 2", n)
		}
		// Pacing: the completes end at today, a date on the axis (the campaign began today).
		pacing := tb.chartDay("#pacing-h ~ figure svg", "completes")
		if i := slices.Index(pacing.Labels, today); i < 0 || len(pacing.Marks) != 1 || pacing.Marks[0] != pacing.X[i] {
			t.Fatalf("pacing: completes drawn at x %v, the axis labels %q at %v: want one mark, at today (%s)",
				pacing.Marks, pacing.Labels, pacing.X, today)
		}
		complete := tb.barColor("complete")
		tb.shot("console-campaign")
		tb.fullShot("console-campaign", phoneWidth)
		tb.fullShot("console-campaign", 1280)

		// The other campaign ranks its outcomes otherwise: "complete" keeps its colour.
		tb.navigates(fmt.Sprintf("%s/console/campaigns/%d", w.s.PublicURL, second),
			chromedp.Navigate(fmt.Sprintf("%s/console/campaigns/%d", w.s.PublicURL, second)))
		if other := tb.barColor("complete"); complete == "" || other != complete || tb.barColor("no outcome yet") == complete {
			t.Fatalf("complete is %q on one campaign's drop-off and %q on the other's", complete, other)
		}
		tb.fullShot("console-campaign-other", 1280)
		tb.navigates(campaignURL, chromedp.Navigate(campaignURL))

		// Pause from the console: the partner's next GET /campaigns no longer lists it.
		watcher := newUser()
		w.impanel(watcher)
		w.waitOffer(watcher, id)
		tb.navigates(campaignURL+"?done=paused", chromedp.Click(chromedp.CSS("#pause")))
		// The console has answered: the pause is committed. From now on, within 1 s.
		start := time.Now()
		if s := tb.str(`document.querySelector("#status").textContent`); s != "paused" {
			t.Fatalf("status %q after pause", s)
		}
		t.Logf("offers stopped within %v of the console's answer", w.waitNoOffer(watcher, id, start, "the pause"))
		tb.consoleLayout()
		tb.shot("console-campaign-paused")

		// The quota target, from the keyboard.
		tb.navigates(campaignURL+"?done=quota", chromedp.Clear(chromedp.CSS("input[name=num_respondents]")),
			chromedp.SendKeys(chromedp.CSS("input[name=num_respondents]"), "40"), chromedp.KeyEvent(kb.Enter))
		if v := tb.str(`(() => { const p = document.querySelector("progress[id^=quota-fill]"); return p.value + "/" + p.max })()`); v != "1/40" {
			t.Fatalf("quota fill %s after the change, want 1/40", v)
		}

		// The webhook page: a URL deliveries refuse (set by an operator; the API refuses it),
		// the reactivation's event dead at its first attempt, and a test event.
		if err := w.s.DB.Accounts.SetBuyerWebhook(context.Background(), w.buyer.ID, "http://127.0.0.1:9/hooks"); err != nil {
			t.Fatal(err)
		}
		w.buyer.Do(t, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", id), map[string]any{"status": 2}).Expect(t, 200)
		w.waitRows("the dead webhook", 1, `SELECT count(*) FROM postback_outbox WHERE buyer_id = $1 AND dead_at IS NOT NULL`, w.buyer.ID)
		tb.navigates(w.s.PublicURL+"/console/webhook", chromedp.Click(chromedp.CSS(`a[href="/console/webhook"]`)))
		tb.consoleLayout()
		tb.navigates(w.s.PublicURL+"/console/webhook/test", chromedp.Click(chromedp.CSS("#send-test")))
		tb.consoleLayout()
		if s := tb.str(`document.querySelector("#test-error").textContent`); s != "webhook host resolves to a non-public address" {
			t.Fatalf("test event error %q", s)
		}
		if n := tb.num(`document.querySelectorAll("#deliveries tbody tr[id^=delivery-]").length`); n != 1 {
			t.Fatalf("%v deliveries listed, want 1", n)
		}
		tb.shot("console-webhook")
	})

	t.Run("operator", func(t *testing.T) {
		ctx := context.Background()
		_, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Olive")
		if err != nil {
			t.Fatal(err)
		}
		open, _ := w.campaign("Open to all")
		// A participant blocked for an implausible profile (two ages years apart).
		user := newUser()
		w.impanel(user)
		var pid int64
		if err := w.s.DB.Pool.QueryRow(ctx, `SELECT id FROM participants WHERE user_identifier = $1`, user).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		for _, a := range []int32{30, 27} {
			age := a
			if _, err := w.s.DB.Quality.RecordImpanelQuality(ctx, quality.Policy{}, persistence.ImpanelQuality{
				ParticipantID: pid, PublisherID: w.pub.ID, CountryID: 1, Age: &age}); err != nil {
				t.Fatal(err)
			}
		}
		if n := w.count(`SELECT count(*) FROM quality_blocks WHERE participant_id = $1 AND unblocked_at IS NULL`, pid); n != 1 {
			t.Fatalf("%d blocks", n)
		}

		for deadline := time.Now().Add(5 * time.Second); w.offers(user).Eligibility.IsEligible; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("still eligible 5 s after the block")
			}
		}

		// The partners' GET /campaigns answers so far, written as every minute.
		if err := w.s.App.Supply.FlushOffers(ctx); err != nil {
			t.Fatal(err)
		}

		tb := b.tab(t)
		tb.navigates(w.s.PublicURL+"/console/operator/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/operator/sign-in"))
		tb.consoleLayout()
		tb.styledAsText("#token")
		tb.shot("console-operator-sign-in")
		tb.navigates(w.s.PublicURL+"/console/operator", chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("button[type=submit]")))
		tb.consoleLayout()
		if n := tb.num(`document.querySelectorAll("[id^=block-]").length`); n != 1 {
			t.Fatalf("%v blocks shown", n)
		}
		if n := tb.num(`document.querySelectorAll("#processes tr[id^=process-]").length`); n < 1 {
			t.Fatalf("%v serve processes listed", n)
		}
		// The day's market on a date axis, each series a dot to see on the phone.
		market := tb.chartDay("#market-h ~ figure svg", "entries")
		if len(market.Labels) != 1 || market.Labels[0] != today || len(market.Marks) != 1 || market.Marks[0] != market.X[0] ||
			len(market.Widths) != 1 || market.Widths[0] < 5 {
			t.Fatalf("market: labels %q at %v, entries drawn at %v, %v px wide: want one dot of 5 px or more, over %s",
				market.Labels, market.X, market.Marks, market.Widths, today)
		}
		tb.shot("console-operator")
		tb.fullShot("console-operator", phoneWidth)
		tb.fullShot("console-operator", 1280)
		tb.navigates(w.s.PublicURL+"/console/operator?done=unblocked", chromedp.Click(chromedp.CSS("button[id^=unblock-]")))
		if n := tb.num(`document.querySelectorAll("[id^=block-]").length`); n != 0 {
			t.Fatalf("%v blocks shown after the unblock", n)
		}
		if n := w.count(`SELECT count(*) FROM quality_blocks WHERE participant_id = $1 AND unblocked_at IS NOT NULL`, pid); n != 1 {
			t.Fatal("the block is not lifted")
		}
		// The partner's next offers have surveys for the participant again.
		w.waitOffer(user, open)
		tb.shot("console-operator-unblocked")
	})
}
