package browsertest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard/switchboard/persistence"
)

// tabTo presses Tab until the element of id has the focus (at most 300 times): the way a
// keyboard user reaches a control.
func (tb *tab) tabTo(id string) {
	tb.t.Helper()
	for range 300 {
		if tb.str(`document.activeElement.id`) == id {
			if s := tb.str(`getComputedStyle(document.activeElement).outlineStyle`); s == "none" {
				tb.t.Fatalf("#%s has the focus and no visible outline", id)
			}
			return
		}
		tb.do(chromedp.KeyEvent(kb.Tab))
	}
	tb.t.Fatalf("Tab never reaches #%s at %s", id, tb.location())
}

// typeIn tabs to the field of id and types text over what it holds (a field reached with
// Tab has its text selected).
func (tb *tab) typeIn(id, text string) {
	tb.t.Helper()
	tb.tabTo(id)
	tb.do(chromedp.KeyEvent(text))
	if got := tb.str(`document.activeElement.value`); got != text {
		tb.t.Fatalf("#%s holds %q after typing %q", id, got, text)
	}
}

// waitNoOffer polls the offers of user until campaign id is not among them, failing when it
// still is a second after start (a change committed then, what: the change), and returns
// how long it took.
func (w *world) waitNoOffer(user string, id int64, start time.Time, what string) time.Duration {
	w.t.Helper()
	for {
		if _, ok := w.offers(user).find(strconv.FormatInt(id, 10)); !ok {
			return time.Since(start)
		}
		if time.Since(start) > time.Second {
			w.t.Fatalf("still offered %v after %s", time.Since(start), what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quotaTargets is the targeting of campaign id's quotas as the API answers it.
func (w *world) quotaTargets(id int64) []string {
	w.t.Helper()
	c := w.buyer.Do(w.t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(w.t, 200).Object(w.t)
	var out []string
	for _, q := range c["campaign_quotas"].([]any) {
		m := q.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", m["num_respondents"], m["campaign_qualifications"]))
	}
	return out
}

// ages is the pre_codes of an age range as the API answers them.
func ages(from, to int) string {
	s := ""
	for a := from; a <= to; a++ {
		if s != "" {
			s += " "
		}
		s += strconv.Itoa(a)
	}
	return "[" + s + "]"
}

// TestConsoleFormsBrowser: a buyer in Chromium creates a campaign with two quotas of
// targeting (the campaign and the first quota with the keyboard alone: Tab, typing, Space
// and Enter), checks a quota's feasibility, activates it, clones it, edits a quota of the
// clone, creates a custom screener for the clone, excludes the supply partner of a
// participant, who loses the offer within a second (the partner's real GET
// /supply_api/v4/campaigns), and sees a refusal with the API's message for the same input
// next to its field; a read-only session finds no control and its post is refused. Screenshots of each page at 390 and 1280 px go to test-artifacts/.
func TestConsoleFormsBrowser(t *testing.T) {
	requireChromium(t)
	w := newWorld(t)
	for range 40 { // the panel the feasibility counts: women of 34 at ZIP 10001
		w.impanel(newUser())
	}
	b := startBrowser(t)
	base := w.s.PublicURL
	link := w.survey.srv.URL + "/s?tid={ID}&rid={RESPONDENT_ID}"
	var id, clone int64

	t.Run("buyer", func(t *testing.T) {
		tb := b.tab(t)
		tb.navigates(base+"/console/sign-in", chromedp.Navigate(base+"/console/sign-in"))
		tb.navigates(base+"/console/campaigns", chromedp.SendKeys(chromedp.CSS("#email"), w.buyer.Email),
			chromedp.SendKeys(chromedp.CSS("#token"), w.buyer.Token), chromedp.KeyEvent(kb.Enter))

		// The campaign, keyboard only.
		tb.tabTo("new-campaign")
		tb.navigates(base+"/console/campaigns/new", chromedp.KeyEvent(kb.Enter))
		tb.consoleLayout()
		tb.styledAsText("#name")
		tb.fullShot("console-campaign-new", phoneWidth)
		tb.fullShot("console-campaign-new", 1280)
		tb.typeIn("name", "Keyboard commuters")
		tb.typeIn("length_of_interview", "10")
		tb.typeIn("incidence", "50")
		tb.typeIn("reentry_interval", "0")
		tb.typeIn("supplier_link", link)
		tb.tabTo("device-1")
		tb.do(chromedp.KeyEvent(" "))
		tb.tabTo("save-campaign")
		loc := tb.navigates(base+"/console/campaigns/", chromedp.KeyEvent(kb.Enter))
		if _, err := fmt.Sscanf(loc, base+"/console/campaigns/%d/edit?done=created", &id); err != nil {
			t.Fatalf("created: at %s", loc)
		}
		c := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Object(t)
		if c["name"] != "Keyboard commuters" || c["incidence"] != float64(50) || c["supplier_link"] != link ||
			fmt.Sprint(c["supported_devices"]) != "[1]" {
			t.Fatalf("created %v", c)
		}

		// The first quota, keyboard only: women of 18 to 40, its feasibility checked.
		tb.tabTo("add-quota")
		quotaNew := fmt.Sprintf("%s/console/campaigns/%d/quotas/new", base, id)
		tb.navigates(quotaNew, chromedp.KeyEvent(kb.Enter))
		tb.consoleLayout()
		tb.do(chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.stay = "1"`)) // gone if the page reloads
		tb.typeIn("name", "Women 18-40")
		tb.typeIn("num_respondents", "50")
		tb.tabTo("about-42")
		tb.do(chromedp.KeyEvent(kb.Enter))
		tb.typeIn("q42-from", "18")
		tb.typeIn("q42-to", "40")
		tb.tabTo("about-43")
		tb.do(chromedp.KeyEvent(" "))
		tb.tabTo("q43-2")
		tb.do(chromedp.KeyEvent(" "))
		// The live estimate (feasibility.js) follows the edits without a page load; the
		// server-rendered check then gives the same.
		live := ""
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(25 * time.Millisecond) {
			live = tb.str(`!document.documentElement.dataset.stay ? "reloaded" : ((document.querySelector("#quota-estimate") || {}).textContent || "")`)
			if live == "reloaded" {
				t.Fatal("the live estimate reloaded the page")
			}
			if n, err := strconv.Atoi(live); err == nil && n >= 1 && tb.str(`String(document.querySelector("#feasibility").hasAttribute("aria-busy"))`) == "false" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no live estimate: %q", tb.str(`document.querySelector("#feasibility").textContent`))
			}
		}
		tb.tabTo("check-feasibility")
		tb.navigates(quotaNew, chromedp.KeyEvent(kb.Enter))
		if s := tb.str(`document.querySelector("#quota-estimate").textContent`); s != live {
			t.Fatalf("the check estimates %s, the live preview showed %s", s, live)
		}
		if n := tb.num(`+document.querySelector("#quota-estimate").textContent`); n < 1 {
			t.Fatalf("feasibility %v for women of 18 to 40 on a panel of 40 such women", n)
		}
		if v := tb.str(`document.querySelector("#q42-to").value + " " + document.querySelector("#q43-2").checked`); v != "40 true" {
			t.Fatalf("the feasibility check lost the targeting: %s", v)
		}
		tb.consoleLayout()
		tb.fullShot("console-quota-new", phoneWidth)
		tb.fullShot("console-quota-new", 1280)
		tb.tabTo("save-quota")
		tb.navigates(fmt.Sprintf("%s/console/campaigns/%d/edit?done=quota-added", base, id), chromedp.KeyEvent(kb.Enter))

		// The second quota with the mouse: men of 41 to 64.
		tb.navigates(quotaNew, chromedp.Click(chromedp.CSS("#add-quota")))
		tb.do(chromedp.Clear(chromedp.CSS("#num_respondents")), chromedp.SendKeys(chromedp.CSS("#num_respondents"), "30"),
			chromedp.Click(chromedp.CSS("#about-42")), chromedp.SendKeys(chromedp.CSS("#q42-from"), "41"),
			chromedp.SendKeys(chromedp.CSS("#q42-to"), "64"), chromedp.Click(chromedp.CSS("#about-43")),
			chromedp.Click(chromedp.CSS("#q43-1")))
		tb.navigates(fmt.Sprintf("%s/console/campaigns/%d/edit?done=quota-added", base, id), chromedp.Click(chromedp.CSS("#save-quota")))
		want := []string{"50 [map[pre_codes:" + ages(18, 40) + " question_id:42] map[pre_codes:[2] question_id:43]]",
			"30 [map[pre_codes:" + ages(41, 64) + " question_id:42] map[pre_codes:[1] question_id:43]]"}
		if got := w.quotaTargets(id); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("quotas %q, want %q", got, want)
		}
		tb.consoleLayout()
		tb.fullShot("console-campaign-edit", phoneWidth)
		tb.fullShot("console-campaign-edit", 1280)

		// Live: a woman of 34 of the partner is offered it.
		campaign := fmt.Sprintf("%s/console/campaigns/%d", base, id)
		tb.navigates(campaign, chromedp.Navigate(campaign))
		tb.navigates(campaign+"?done=activated", chromedp.Click(chromedp.CSS("#activate")))
		watcher := newUser()
		w.impanel(watcher)
		w.waitOffer(watcher, id)

		// Clone it: the copy has both quotas.
		tb.navigates(campaign+"/clone", chromedp.Click(chromedp.CSS("#clone-campaign")))
		tb.consoleLayout()
		tb.fullShot("console-campaign-clone", phoneWidth)
		tb.fullShot("console-campaign-clone", 1280)
		tb.do(chromedp.Clear(chromedp.CSS("#name")), chromedp.SendKeys(chromedp.CSS("#name"), "Commuters, second wave"))
		loc = tb.navigates(base+"/console/campaigns/", chromedp.Click(chromedp.CSS("#save-campaign")))
		if _, err := fmt.Sscanf(loc, base+"/console/campaigns/%d/edit?done=cloned", &clone); err != nil || clone == id {
			t.Fatalf("cloned: at %s", loc)
		}
		if got := w.quotaTargets(clone); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the clone's quotas %q, want %q", got, want)
		}

		// Edit the clone's first quota: 25 women of 20 to 30.
		first := int64(tb.num(`+document.querySelector("[id^=edit-quota-]").id.slice(11)`))
		tb.navigates(fmt.Sprintf("%s/console/campaigns/%d/quotas/%d/edit", base, clone, first),
			chromedp.Click(chromedp.CSS(fmt.Sprintf("#edit-quota-%d", first))))
		if v := tb.str(`[document.querySelector("#q42-from").value, document.querySelector("#q42-to").value, document.querySelector("#q43-2").checked].join(" ")`); v != "18 40 true" {
			t.Fatalf("the quota form shows %q of the stored targeting", v)
		}
		tb.consoleLayout()
		tb.fullShot("console-quota-edit", phoneWidth)
		tb.fullShot("console-quota-edit", 1280)
		tb.do(chromedp.Clear(chromedp.CSS("#num_respondents")), chromedp.SendKeys(chromedp.CSS("#num_respondents"), "25"),
			chromedp.Clear(chromedp.CSS("#q42-from")), chromedp.SendKeys(chromedp.CSS("#q42-from"), "20"),
			chromedp.Clear(chromedp.CSS("#q42-to")), chromedp.SendKeys(chromedp.CSS("#q42-to"), "30"))
		tb.navigates(fmt.Sprintf("%s/console/campaigns/%d/edit?done=quota-saved", base, clone), chromedp.Click(chromedp.CSS("#save-quota")))
		edited := "25 [map[pre_codes:" + ages(20, 30) + " question_id:42] map[pre_codes:[2] question_id:43]]"
		if got := w.quotaTargets(clone); got[0] != edited || got[1] != want[1] {
			t.Fatalf("the clone's quotas after the edit %q", got)
		}

		// A screener of the buyer's own on the clone: the question, its answers, the two that
		// qualify, created and attached in one post.
		cloneEdit := fmt.Sprintf("%s/console/campaigns/%d/edit", base, clone)
		tb.navigates(fmt.Sprintf("%s/console/campaigns/%d/screeners/new", base, clone), chromedp.Click(chromedp.CSS("#new-screener")))
		tb.consoleLayout()
		tb.styledAsText("#answer-1")
		tb.do(chromedp.SendKeys(chromedp.CSS("#question_text"), "Do you commute by train?"), chromedp.Click(chromedp.CSS("#answer-type-1")),
			chromedp.SendKeys(chromedp.CSS("#answer-1"), "Every day"), chromedp.Click(chromedp.CSS("#qualifies-1")),
			chromedp.SendKeys(chromedp.CSS("#answer-2"), "Some days"), chromedp.Click(chromedp.CSS("#qualifies-2")),
			chromedp.SendKeys(chromedp.CSS("#answer-3"), "Never"))
		tb.fullShot("console-screener-new", phoneWidth)
		tb.fullShot("console-screener-new", 1280)
		tb.navigates(cloneEdit+"?done=screener-created", chromedp.Click(chromedp.CSS("#save-screener")))
		if n := w.count(`SELECT count(*) FROM campaign_qualifications cq JOIN qualifications q USING (question_id)
			WHERE cq.campaign_id = $1 AND cq.pre_codes = '{1,2}' AND q.question_text = 'Do you commute by train?' AND q.answer_type = 1
			AND (SELECT count(*) FROM qualification_answers a WHERE a.question_id = q.question_id) = 3`, clone); n != 1 {
			t.Fatal("the screener form did not store the question, its three answers and the two that qualify")
		}

		// Exclude the watcher's supplier: its offers lose the campaign within a second of the
		// console's answer.
		tb.navigates(campaign+"/edit", chromedp.Navigate(campaign+"/edit"))
		tb.do(chromedp.Click(chromedp.CSS(fmt.Sprintf("#supplier-%d", w.pub.ID))))
		tb.navigates(campaign+"/edit?done=saved", chromedp.Click(chromedp.CSS("#save-campaign")))
		start := time.Now()
		if tb.str(fmt.Sprintf(`String(document.querySelector("#supplier-%d").checked)`, w.pub.ID)) != "true" {
			t.Fatal("the saved form does not show the supplier excluded")
		}
		t.Logf("the supplier's participant lost the offer within %v of the console's answer",
			w.waitNoOffer(watcher, id, start, "the supplier's exclusion"))

		// A refusal: the API's message for the same input, next to the field it names.
		apiMsg := w.apiRefusal("POST", "/api/v1/campaigns", map[string]any{"name": "Refused", "length_of_interview": 10,
			"incidence": 0, "reentry_interval": 0, "country_language_id": 1, "supplier_link": link,
			"supported_devices": []int{}, "excluded_supplier_ids": []int{}})
		tb.navigates(base+"/console/campaigns/new", chromedp.Navigate(base+"/console/campaigns/new"))
		tb.do(chromedp.SendKeys(chromedp.CSS("#name"), "Refused"), chromedp.SendKeys(chromedp.CSS("#length_of_interview"), "10"),
			chromedp.SendKeys(chromedp.CSS("#incidence"), "0"), chromedp.SendKeys(chromedp.CSS("#reentry_interval"), "0"),
			chromedp.SendKeys(chromedp.CSS("#supplier_link"), link))
		tb.navigates(base+"/console/campaigns/new", chromedp.Click(chromedp.CSS("#save-campaign")))
		if got := tb.str(`document.querySelector("#incidence-error").textContent`); got != apiMsg {
			t.Fatalf("the form shows %q next to the incidence, the API answers %q", got, apiMsg)
		}
		if got := tb.str(`document.querySelector("#incidence").getAttribute("aria-describedby")`); got != "incidence-error" {
			t.Fatalf("the incidence is described by %q", got)
		}
		if got := tb.str(`document.activeElement.className + "|" + document.querySelector(".error-summary a").textContent`); got != "error-summary|"+apiMsg {
			t.Fatalf("error summary %q", got)
		}
		tb.consoleLayout()
		tb.fullShot("console-campaign-refused", phoneWidth)
		tb.fullShot("console-campaign-refused", 1280)
	})

	t.Run("read-only", func(t *testing.T) {
		_, readToken, err := w.s.DB.Accounts.IssueScopedBuyerToken(context.Background(), w.buyer.Email, w.s.Env, persistence.ScopeRead)
		if err != nil {
			t.Fatal(err)
		}
		tb := b.tab(t)
		tb.navigates(base+"/console/sign-in", chromedp.Navigate(base+"/console/sign-in"))
		tb.navigates(base+"/console/campaigns", chromedp.SendKeys(chromedp.CSS("#email"), w.buyer.Email),
			chromedp.SendKeys(chromedp.CSS("#token"), readToken), chromedp.KeyEvent(kb.Enter))
		campaign := fmt.Sprintf("/console/campaigns/%d", id)
		for _, p := range []string{"/console/campaigns", campaign} {
			tb.navigates(base+p, chromedp.Navigate(base+p))
			if n := tb.num(`document.querySelectorAll("#new-campaign, #edit-campaign, #clone-campaign, a[href$=edit], a[href$=clone]").length`); n != 0 {
				t.Fatalf("%s: %v create, edit or clone controls shown to a read token", p, n)
			}
		}
		tb.navigates(base+campaign+"/edit", chromedp.Navigate(base+campaign+"/edit"))
		if s := tb.str(`document.querySelector("h1").textContent`); s != "This session is read-only" {
			t.Fatalf("the edit page of a read-only session answered %q", s)
		}
		tb.navigates(base+campaign, chromedp.Navigate(base+campaign))
		state := `SELECT count(*) FROM campaigns WHERE id = $1 AND name = 'Keyboard commuters' AND excluded_supplier_ids = $2`
		if n := w.count(state, id, []int64{w.pub.ID}); n != 1 {
			t.Fatalf("campaign %d is not as the buyer left it", id)
		}
		tb.forgePost(base, campaign+"/edit", map[string]string{"name": "Renamed", "excluded_supplier_ids": ""})
		if s := tb.str(`document.querySelector("h1").textContent`); s != "This session is read-only" {
			t.Fatalf("an edit posted by a read-only session answered %q", s)
		}
		if n := w.count(state, id, []int64{w.pub.ID}); n != 1 {
			t.Fatal("a read-only session's post changed the campaign")
		}
	})
}
