package browsertest

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard/switchboard/persistence"
)

// listNames is the campaign names of the list's rows, in order.
const listNames = `[...document.querySelectorAll("#campaign-list tbody th a")].map(a => a.textContent).join("|")`

// bothWidths checks a console page as a phone shows it (consoleLayout: nothing wider than
// the 390 px screen, controls labelled, 44 px buttons) and saves it whole at 390 px and at
// 1280 px as test-artifacts/<name>-390.png and <name>-1280.png; where the page has columns
// (.columns), they stand side by side at 1280 px and one above the other at 390 px.
func (tb *tab) bothWidths(name string) {
	tb.t.Helper()
	tb.consoleLayout()
	const sideBySide = `(() => { const c = document.querySelector(".columns"); if (!c) return "none";
		const [a, b] = [...c.children]; return a.getBoundingClientRect().top === b.getBoundingClientRect().top &&
			a.getBoundingClientRect().left < b.getBoundingClientRect().left ? "side" : "stacked" })()`
	if s := tb.str(sideBySide); s == "side" {
		tb.t.Fatalf("%s: columns side by side on a phone", name)
	}
	tb.fullShot(name, phoneWidth)
	tb.do(chromedp.EmulateViewport(1280, phoneHeight, chromedp.EmulateScale(1)))
	s := tb.str(sideBySide)
	w := tb.num(`document.documentElement.scrollWidth`)
	tb.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulatePortrait))
	if s == "stacked" || w > 1280 {
		tb.t.Fatalf("%s at 1280 px: columns %s, page %v px wide", name, s, w)
	}
	tb.fullShot(name, 1280)
}

// loads runs actions that lead to another page and waits until a new document (another
// time origin) whose URL starts with prefix has loaded, and returns its URL. It is navigates
// for GET forms: after a GET form's submission Chromium was seen reporting the new URL with
// the marker navigates sets on the old document, while the time origin always changes.
func (tb *tab) loads(prefix string, actions ...chromedp.Action[chromedp.Void]) string {
	tb.t.Helper()
	const state = `performance.timeOrigin + "|" + document.readyState + "|" + location.href`
	before, _, _ := strings.Cut(tb.str(state), "|")
	tb.do(actions...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](state))
		if err == nil {
			origin, rest, _ := strings.Cut(s, "|")
			ready, loc, _ := strings.Cut(rest, "|")
			if origin != before && ready == "complete" && strings.HasPrefix(loc, prefix) {
				return loc
			}
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("no new page at %q… (now %q, %v)", prefix, s, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestConsoleCampaignListBrowser drives the campaign list as a buyer would, from the
// keyboard where a buyer would type: search, a status filter, sort by a column heading and
// back, paging, the CSV export of the view, and a bad date refused with the field named;
// then every console page is checked on a 390 px phone (no horizontal overflow) and at
// 1280 px (two columns where the page has them), and saved at both widths.
func TestConsoleCampaignListBrowser(t *testing.T) {
	requireChromium(t)
	w := newWorld(t)
	b := startBrowser(t)
	ctx := context.Background()
	streaming, _ := w.campaign("Streaming habits")
	w.campaign("Streaming on trains")
	paused, _ := w.campaign("Streaming paused")
	w.buyer.Do(t, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", paused), map[string]any{"status": 5}).Expect(t, 200)
	// 27 more, as copies of the first: 30 in all, two pages of 25.
	if _, err := w.s.DB.Pool.Exec(ctx, `INSERT INTO campaigns (buyer_id, project_id, wave_number, name, cpi_cents, days_in_field,
			incidence, status, length_of_interview, supplier_link, country_language_id)
		SELECT c.buyer_id, c.project_id, c.wave_number + g, 'Bulk campaign ' || lpad(g::text, 2, '0'), c.cpi_cents + g, 5,
			50, 5, 10, c.supplier_link, 1 + g % 2 FROM campaigns c, generate_series(1, 27) g WHERE c.id = $1`, streaming); err != nil {
		t.Fatal(err)
	}
	// The first has a screener, excludes a supplier, and a complete: its spend comes from
	// the ledger.
	other, _, err := w.s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Coin Farm", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: w.partner.srv.URL + "/back", Environment: w.s.Env})
	if err != nil {
		t.Fatal(err)
	}
	w.buyer.Do(t, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", streaming), map[string]any{"excluded_supplier_ids": []int64{other.ID}}).Expect(t, 200)
	player := newUser()
	w.impanel(player)
	w.complete(w.enter(player, streaming))
	w.screener(streaming)
	list := w.s.PublicURL + "/console/campaigns"

	tb := b.tab(t)
	tb.loads(w.s.PublicURL+"/console/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/sign-in"))
	tb.bothWidths("console-sign-in")
	tb.loads(list, chromedp.SendKeys(chromedp.CSS("#email"), w.buyer.Email),
		chromedp.SendKeys(chromedp.CSS("#token"), w.buyer.Token), chromedp.Click(chromedp.CSS("button[type=submit]")))
	if n := tb.num(`+document.querySelector("#total").textContent`); n != 30 {
		t.Fatalf("%v campaigns counted, want 30", n)
	}
	if n := tb.num(`document.querySelectorAll("#campaign-list tbody tr").length`); n != 30 {
		t.Fatalf("%v rows on the first page of 50, want 30", n)
	}
	if s := tb.str(fmt.Sprintf(`document.querySelector("#row-%d [data-label=Spend]").textContent`, streaming)); s != "$2.00" {
		t.Fatalf("spend of the campaign with one complete at $2.00: %q", s)
	}
	if s := tb.str(fmt.Sprintf(`document.querySelector("#row-%d [data-label=Spend]").textContent`, paused)); s != "$0.00 est." {
		t.Fatalf("spend of the campaign with one complete at $2.00: %q", s)
	}
	tb.consoleLayout()

	// Search and a status, from the keyboard: type, tick, Enter in the search field submits.
	tb.do(chromedp.Click(chromedp.CSS("#status-2")), chromedp.SendKeys(chromedp.CSS("#q"), "streaming"))
	loc := tb.loads(list+"?", chromedp.Focus(chromedp.CSS("#q")), chromedp.KeyEvent(kb.Enter))
	if u, _ := url.Parse(loc); u.Query().Get("q") != "streaming" || u.Query().Get("status") != "2" {
		t.Fatalf("the filters are not in the URL: %s", loc)
	}
	if s := tb.str(listNames); s != "Streaming habits|Streaming on trains" {
		t.Fatalf("active campaigns named streaming: %q", s)
	}
	// On a wide screen, sort by name from the column heading, then the other way; the
	// filters stay. (A phone sorts with the form's Sort by: the headings are not shown.)
	if s := tb.str(`getComputedStyle(document.querySelector("#campaign-list thead")).display`); s != "none" {
		t.Fatalf("the list's headings are shown on a phone (display %s)", s)
	}
	tb.do(chromedp.EmulateViewport(1280, phoneHeight, chromedp.EmulateScale(1)))
	tb.loads(list+"?", chromedp.Click(chromedp.CSS("#sort-name")))
	tb.loads(list+"?", chromedp.Click(chromedp.CSS("#sort-name")))
	if s := tb.str(listNames); s != "Streaming on trains|Streaming habits" {
		t.Fatalf("sorted by name descending: %q", s)
	}
	if s := tb.str(`document.querySelector("th[aria-sort]").textContent.trim() + " " + document.querySelector("th[aria-sort]").getAttribute("aria-sort")`); s != "Campaign ▼ descending" {
		t.Fatalf("sorted heading %q", s)
	}
	// Keyboard focus on a heading's sort link is visible.
	tb.do(chromedp.Focus(chromedp.CSS("#q")))
	for i := 0; i < 40 && tb.str(`document.activeElement.id`) != "sort-name"; i++ {
		tb.do(chromedp.KeyEvent(kb.Tab))
	}
	if s := tb.str(`document.activeElement.id + " " + getComputedStyle(document.activeElement).outlineStyle`); s != "sort-name solid" {
		t.Fatalf("tabbing to the name heading: %q", s)
	}
	tb.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulatePortrait))
	tb.bothWidths("console-campaigns")
	// The CSV of this view lists what the page lists.
	href := tb.str(`document.querySelector("#export-csv").getAttribute("href")`)
	rows, err := csv.NewReader(strings.NewReader(string(w.signedInConsole().do("GET", href, nil, nil).Expect(t, 200).Body))).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][1] != "Streaming on trains" || rows[2][1] != "Streaming habits" {
		t.Fatalf("export %s: %q (%v)", href, rows, err)
	}

	// Paging: 25 a page, by CPI; the second page has the other 5, and back.
	tb.loads(list+"?sort=cpi", chromedp.Navigate(list+"?sort=cpi&per_page=25"))
	if n := tb.num(`document.querySelectorAll("#campaign-list tbody tr").length`); n != 25 {
		t.Fatalf("%v rows on a page of 25", n)
	}
	tb.loads(list+"?", chromedp.Click(chromedp.CSS("#next")))
	if n := tb.num(`document.querySelectorAll("#campaign-list tbody tr").length`); n != 5 || !strings.HasPrefix(tb.str(`document.querySelector("#list-status").textContent`), "Campaigns 26–30 of 30,") {
		t.Fatalf("%v rows on the second page (%q)", n, tb.str(`document.querySelector("#list-status").textContent`))
	}
	if s := tb.str(`document.querySelector(".pager span").textContent`); s != "Page 2 of 2" {
		t.Fatalf("pager %q", s)
	}
	tb.loads(list+"?", chromedp.Click(chromedp.CSS("#prev")))
	if n := tb.num(`document.querySelectorAll("#campaign-list tbody tr").length`); n != 25 {
		t.Fatalf("%v rows back on the first page", n)
	}
	// A bad date: refused, the field named, focus on the summary.
	tb.loads(list+"?", chromedp.Navigate(list+"?created_from=2026-02-30"))
	if s := tb.str(`document.querySelector(".error-summary a").getAttribute("href") + " " + document.querySelector(".error-summary a").textContent`); s != "#created_from Created from must be a date, YYYY-MM-DD." {
		t.Fatalf("error summary %q", s)
	}
	if s := tb.str(`document.querySelector("#created_from").getAttribute("aria-invalid")`); s != "true" {
		t.Fatalf("created_from aria-invalid %q", s)
	}
	tb.bothWidths("console-campaigns-invalid")

	// The other pages: a campaign with its targeting, the webhook, a page that is not there.
	campaign := fmt.Sprintf("%s/console/campaigns/%d", w.s.PublicURL, streaming)
	tb.loads(campaign, chromedp.Navigate(campaign))
	if s := tb.str(`document.querySelector("#screeners").innerText + "|" + document.querySelector("#excluded-suppliers").innerText`); s != "Do you own a car?\nqualifies: Yes|Coin Farm #"+fmt.Sprint(other.ID) {
		t.Fatalf("screeners and excluded suppliers: %q", s)
	}
	tb.bothWidths("console-campaign-targeting")
	tb.loads(w.s.PublicURL+"/console/webhook", chromedp.Navigate(w.s.PublicURL+"/console/webhook"))
	tb.bothWidths("console-webhook")
	tb.loads(w.s.PublicURL+"/console/campaigns/999999999", chromedp.Navigate(w.s.PublicURL+"/console/campaigns/999999999"))
	tb.bothWidths("console-not-found")

	// Operator pages, as a viewer.
	_, token, err := w.s.DB.Operators.CreateOperatorWithRole(ctx, "Viewer Val", persistence.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	op := b.tab(t)
	op.loads(w.s.PublicURL+"/console/operator/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/operator/sign-in"))
	op.bothWidths("console-operator-sign-in")
	op.loads(w.s.PublicURL+"/console/operator", chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("button[type=submit]")))
	op.bothWidths("console-operator-viewer")
}
