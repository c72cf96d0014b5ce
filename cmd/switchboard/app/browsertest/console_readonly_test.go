package browsertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// forgePost submits, from the page in tb, a form to base+path with the page's CSRF value and the
// given fields, as a hand-made form would: what a read-only session posts when its page
// shows no control.
func (tb *tab) forgePost(base, path string, fields map[string]string) {
	tb.t.Helper()
	js := `(() => { const f = document.createElement("form"); f.method = "post"; f.action = ` + fmt.Sprintf("%q", path) + `;
		const add = (k, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i); };
		add("csrf", document.querySelector("input[name=csrf]").value);`
	for k, v := range fields {
		js += fmt.Sprintf(`add(%q, %q);`, k, v)
	}
	js += `document.body.appendChild(f); f.submit(); })()`
	tb.navigates(base+path, chromedp.Evaluate[chromedp.Void](js))
}

// writeControls counts what in the page's content changes something: forms, buttons and
// inputs (the header's sign-out form is outside main).
const writeControls = `document.querySelectorAll("main form, main button, main input, main select, main textarea").length`

// TestConsoleReadOnlyBrowser: a buyer signed in with a read token finds no write control on
// the campaign and webhook pages (no pause, complete, change target, test event), and a
// write posted from that session anyway is refused (403) and changes nothing; an operator
// whose role is viewer finds the quality block but no unblock, and its unblock post is
// refused.
func TestConsoleReadOnlyBrowser(t *testing.T) {
	requireChromium(t)
	w := newWorld(t)
	b := startBrowser(t)
	ctx := context.Background()
	id, _ := w.campaign("Read-only habits")
	w.buyer.Do(t, "PUT", "/api/v1/webhook", map[string]any{"url": "https://buyer.example/switchboard/events"}).Expect(t, 200)
	_, readToken, err := w.s.DB.Accounts.IssueScopedBuyerToken(ctx, w.buyer.Email, w.s.Env, persistence.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("buyer", func(t *testing.T) {
		tb := b.tab(t)
		tb.navigates(w.s.PublicURL+"/console/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/sign-in"))
		tb.navigates(w.s.PublicURL+"/console/campaigns", chromedp.SendKeys(chromedp.CSS("#email"), w.buyer.Email),
			chromedp.SendKeys(chromedp.CSS("#token"), readToken), chromedp.Click(chromedp.CSS("button[type=submit]")))
		if s := tb.str(`(document.querySelector("#read-only") || {}).textContent || ""`); s != "(read-only)" {
			t.Fatalf("no read-only mark in the header (%q)", s)
		}
		// The list's search is a GET form; nothing on it posts.
		if n := tb.num(`document.querySelectorAll("main form[method=post], main button[formmethod=post]").length`); n != 0 {
			t.Fatalf("%v posting controls on the campaign list of a read-only session", n)
		}
		if n := tb.num(`document.querySelectorAll("#filters[method=get]").length`); n != 1 {
			t.Fatal("no search form on the campaign list of a read-only session")
		}
		campaign := fmt.Sprintf("/console/campaigns/%d", id)
		tb.navigates(w.s.PublicURL+campaign, chromedp.Navigate(w.s.PublicURL+campaign))
		tb.consoleLayout()
		if n := tb.num(`document.querySelectorAll("[id^=quota-]").length`); n < 1 {
			t.Fatalf("%v quotas shown, want the campaign's", n)
		}
		if n := tb.num(writeControls); n != 0 {
			t.Fatalf("%v write controls on the campaign page of a read-only session", n)
		}
		tb.shot("console-read-only")
		tb.navigates(w.s.PublicURL+"/console/webhook", chromedp.Navigate(w.s.PublicURL+"/console/webhook"))
		if s := tb.str(`document.querySelector("#webhook-url").textContent`); s != "https://buyer.example/switchboard/events" {
			t.Fatalf("webhook URL %q", s)
		}
		if n := tb.num(writeControls); n != 0 {
			t.Fatalf("%v write controls on the webhook page of a read-only session", n)
		}

		tb.navigates(w.s.PublicURL+campaign, chromedp.Navigate(w.s.PublicURL+campaign))
		tb.forgePost(w.s.PublicURL, campaign+"/status", map[string]string{"status": "pause"})
		if s := tb.str(`document.querySelector("h1").textContent`); s != "This session is read-only" {
			t.Fatalf("a pause posted by a read-only session answered %q", s)
		}
		if st := w.count(`SELECT status FROM campaigns WHERE id = $1`, id); st != persistence.StatusActive {
			t.Fatalf("campaign status %d after a read-only session's pause, want still active", st)
		}
	})

	t.Run("operator viewer", func(t *testing.T) {
		_, token, err := w.s.DB.Operators.CreateOperatorWithRole(ctx, "Viewer Vic", persistence.RoleViewer)
		if err != nil {
			t.Fatal(err)
		}
		user := newUser()
		w.impanel(user)
		var pid int64
		if err := w.s.DB.Pool.QueryRow(ctx, `SELECT id FROM participants WHERE user_identifier = $1`, user).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		for _, a := range []int32{30, 27} { // an implausible profile: two ages years apart
			age := a
			if _, err := w.s.DB.Quality.RecordImpanelQuality(ctx, quality.Policy{}, persistence.ImpanelQuality{
				ParticipantID: pid, PublisherID: w.pub.ID, CountryID: 1, Age: &age}); err != nil {
				t.Fatal(err)
			}
		}
		tb := b.tab(t)
		tb.navigates(w.s.PublicURL+"/console/operator/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/operator/sign-in"))
		tb.navigates(w.s.PublicURL+"/console/operator", chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("button[type=submit]")))
		if n := tb.num(`document.querySelectorAll("[id^=block-]").length`); n != 1 {
			t.Fatalf("%v blocks shown to a viewer, want 1", n)
		}
		if n := tb.num(`document.querySelectorAll("button[id^=unblock-], form[action$=unblock]").length`); n != 0 {
			t.Fatalf("a viewer is shown %v unblock controls", n)
		}
		// Nothing else that changes something either: no postback retry, no key management.
		if n := tb.num(writeControls); n != 0 {
			t.Fatalf("a viewer is shown %v write controls on the operator page", n)
		}
		tb.consoleLayout()
		tb.forgePost(w.s.PublicURL, "/console/operator/unblock", map[string]string{"publisher_id": fmt.Sprint(w.pub.ID), "user": user})
		if s := tb.str(`document.querySelector("h1").textContent`); s != "This session is read-only" {
			t.Fatalf("a viewer's unblock answered %q", s)
		}
		if n := w.count(`SELECT count(*) FROM quality_blocks WHERE participant_id = $1 AND unblocked_at IS NULL`, pid); n != 1 {
			t.Fatalf("%d blocks in force after a viewer's unblock, want 1", n)
		}
	})
}
