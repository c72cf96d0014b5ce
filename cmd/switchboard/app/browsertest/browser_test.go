package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard/switchboard/router/payout"
)

// Browser tests drive Debian's Chromium (make browser installs it) headless through the
// Chrome DevTools Protocol, on a phone-sized viewport. Without Chromium they skip, except
// under CI=true, where they fail.

const chromiumPath = "/usr/bin/chromium"

// Phone viewport (an iPhone 12/13/14's CSS pixels).
const (
	phoneWidth  = 390
	phoneHeight = 844
)

// browser starts one headless Chromium for t; tabs are opened with tab.
type browser struct {
	t      *testing.T
	ctx    context.Context
	shots  string // test-artifacts/ at the repository's root
	mu     sync.Mutex
	denied []string // console messages about the Content-Security-Policy
}

// requireChromium skips t without Chromium, or fails it under CI.
func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: run `make browser` (CI must run the browser tests)", chromiumPath)
		}
		t.Skipf("%s is not installed (make browser installs it)", chromiumPath)
	}
}

// startBrowser starts Chromium; call it after starting the server, so that the browser
// (and its keep-alive connections) ends before the server shuts down.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	requireChromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("accept-lang", "en-US"),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.WindowSize(phoneWidth, phoneHeight),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx, shots: filepath.Join(repoRoot(t), "test-artifacts")}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// tab is one browser tab with the phone viewport, watching the console for CSP reports.
type tab struct {
	b   *browser
	t   *testing.T
	ctx context.Context
}

func (b *browser) tab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Refused to") {
				b.mu.Lock()
				b.denied = append(b.denied, m.Text)
				b.mu.Unlock()
			}
		}
	}()
	tb := &tab{b: b, t: t, ctx: ctx}
	tb.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(1), chromedp.EmulateMobile,
		chromedp.EmulatePortrait))
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.denied) > 0 {
			t.Errorf("the Content-Security-Policy refused something: %q", b.denied)
		}
	})
	return tb
}

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v (at %s)", err, tb.location())
	}
}

func (tb *tab) location() string {
	loc, _ := chromedp.Run(tb.ctx, chromedp.Location())
	return loc
}

func (tb *tab) str(js string) string {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (tb *tab) num(js string) float64 {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](js))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// navigates runs actions that lead to another page (a link, a form), then waits until a
// new document whose URL starts with prefix has loaded, and returns its URL.
func (tb *tab) navigates(prefix string, actions ...chromedp.Action[chromedp.Void]) string {
	tb.t.Helper()
	tb.do(chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.left = "1"`))
	tb.do(actions...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		state, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](
			`(document.documentElement.dataset.left || "") + "|" + document.readyState + "|" + location.href`))
		if err == nil {
			left, rest, _ := strings.Cut(state, "|")
			ready, loc, _ := strings.Cut(rest, "|")
			if left == "" && ready == "complete" && strings.HasPrefix(loc, prefix) {
				return loc
			}
		}
		if time.Now().After(deadline) {
			h1, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 300) : ""`))
			tb.t.Fatalf("no new page at %q… (now %q, %v): %q", prefix, state, err, h1)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// shot saves a screenshot of the viewport as test-artifacts/<name>.png.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(tb.b.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot %s", p)
}

// fullShot saves a screenshot of the whole page laid out width px wide as
// test-artifacts/<name>-<width>.png (a phone's 390, a laptop's 1280), then puts the phone
// viewport back.
func (tb *tab) fullShot(name string, width int64) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(width, phoneHeight, chromedp.EmulateScale(1)))
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	tb.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(1), chromedp.EmulateMobile,
		chromedp.EmulatePortrait))
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(tb.b.shots, fmt.Sprintf("%s-%d.png", name, width))
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot %s", p)
}

// checkLayout checks what a phone user sees: the page's language, the stylesheet applied
// (its CSP hash accepted), nothing wider than the screen, and touch targets of 44 px.
func (tb *tab) checkLayout(lang string) {
	tb.t.Helper()
	if got := tb.str(`document.documentElement.lang`); got != lang {
		tb.t.Fatalf("lang %q, want %q", got, lang)
	}
	if bg := tb.str(`getComputedStyle(document.querySelector("button")).backgroundColor`); bg != "rgb(11, 79, 179)" {
		tb.t.Fatalf("stylesheet not applied: button background %q", bg)
	}
	if w := tb.num(`document.documentElement.scrollWidth`); w > phoneWidth {
		tb.t.Fatalf("page is %v px wide on a %d px screen", w, phoneWidth)
	}
	if h := tb.num(`document.querySelector("button").getBoundingClientRect().height`); h < 44 {
		tb.t.Fatalf("button is %v px high", h)
	}
	if n := tb.num(`[...document.querySelectorAll("input:not([type=hidden]),textarea,select")].filter(e => !e.labels || e.labels.length == 0).length`); n != 0 {
		tb.t.Fatalf("%v controls without a label", n)
	}
}

func TestBrowser(t *testing.T) {
	requireChromium(t)
	w := newWorld(t)
	b := startBrowser(t)
	campaignID, _ := w.campaign("Streaming habits")
	screenerCampaign, _ := w.campaign("Car owners")
	questionID := w.screener(screenerCampaign)
	partnerBack := w.partner.srv.URL + "/back?app=pq&"

	t.Run("profiler", func(t *testing.T) {
		tb := b.tab(t)
		user := newUser()
		o := w.offers(user)
		if len(o.Surveys) != 1 || o.Surveys[0].Identifier != "profile" {
			t.Fatalf("offers %+v", o)
		}
		tb.do(chromedp.Navigate(o.Surveys[0].OfferEntryURL))
		tb.checkLayout("en-US")
		if h := tb.str(`document.querySelector("h1").textContent`); h != "Tell us about yourself" {
			t.Fatalf("h1 %q", h)
		}
		tb.shot("profiler")

		// Sending nothing: the errors, summarized at the top, focused.
		tb.navigates(w.s.PublicURL+"/supply_api/v4/profile", chromedp.Click(chromedp.CSS("button[type=submit]")))
		if n := tb.num(`document.querySelectorAll(".error-summary li").length`); n != 3 {
			t.Fatalf("%v errors, want 3 (the required questions)", n)
		}
		if c := tb.str(`document.activeElement.className`); c != "error-summary" {
			t.Fatalf("focus on %q, not the error summary", c)
		}
		tb.shot("profiler-errors")

		loc := tb.navigates(partnerBack,
			chromedp.SendKeys(chromedp.CSS("#q42"), "34"),
			chromedp.Click(chromedp.CSS("#q43-2")),
			chromedp.SendKeys(chromedp.CSS("#q45"), "10001"),
			chromedp.Click(chromedp.CSS("#q110-1")),
			chromedp.Click(chromedp.CSS("#q110-2")),
			chromedp.Click(chromedp.CSS("button[type=submit]")),
		)
		if !strings.HasPrefix(loc, partnerBack+"status=profiled&reward=0&sech=") || !payout.VerifySech(loc[strings.Index(loc, "?")+1:], w.pub.APISecret) {
			t.Fatalf("partner redirect %s", loc)
		}
		tb.shot("profiler-back-at-partner")
		if n := w.count(`SELECT count(*) FROM participants WHERE user_identifier = $1 AND profile->'42' = '[34]'`, user); n != 1 {
			t.Fatal("not impaneled")
		}
		// Impaneled: the partner's next GET /campaigns has the real survey.
		w.waitOffer(user, campaignID)
	})

	t.Run("profiler keyboard only", func(t *testing.T) {
		tb := b.tab(t)
		user := newUser()
		tb.do(chromedp.Navigate(w.offers(user).Surveys[0].OfferEntryURL))
		active := func() string { return tb.str(`document.activeElement.id || document.activeElement.tagName`) }
		press := func(keys string) { tb.do(chromedp.KeyEvent(keys)) }
		focusRing := func() {
			t.Helper()
			if s := tb.str(`getComputedStyle(document.activeElement).outlineStyle`); s != "solid" {
				t.Fatalf("no visible focus on %s (outline %q)", active(), s)
			}
		}
		press(kb.Tab)
		if a := active(); a != "A" { // "Change country"
			t.Fatalf("first tab stop %q", a)
		}
		focusRing()
		press(kb.Tab)
		if a := active(); a != "q42" {
			t.Fatalf("second tab stop %q, want the age", a)
		}
		focusRing()
		press("29")
		press(kb.Tab)
		if a := active(); a != "q43-1" {
			t.Fatalf("third tab stop %q, want the gender radio group", a)
		}
		focusRing()
		press(" ")          // Male
		press(kb.ArrowDown) // Female: arrows move the choice within the group
		press(kb.Tab)
		if a := active(); a != "q45" {
			t.Fatalf("fourth tab stop %q, want the ZIP code", a)
		}
		press("90210")
		tb.shot("profiler-keyboard")
		loc := tb.navigates(partnerBack, chromedp.KeyEvent(kb.Enter)) // submits the form from the text field
		if !strings.Contains(loc, "status=profiled") {
			t.Fatalf("partner redirect %s", loc)
		}
		if n := w.count(`SELECT count(*) FROM participants WHERE user_identifier = $1 AND profile->'42' = '[29]'
			AND profile->'43' = '[2]' AND profile->'45' = '["90210"]'`, user); n != 1 {
			var p string
			_ = w.s.DB.Pool.QueryRow(context.Background(), `SELECT profile::text FROM participants WHERE user_identifier = $1`, user).Scan(&p)
			t.Fatalf("keyboard answers not stored: %s", p)
		}
	})

	qid := "q" + strconv.Itoa(questionID)
	t.Run("prescreener pass", func(t *testing.T) {
		tb := b.tab(t)
		user := newUser()
		w.impanel(user)
		o := w.waitOffer(user, screenerCampaign)
		tb.navigates(w.s.PublicURL+"/router/prescreen?token=", chromedp.Navigate(o.OfferEntryURL))
		tb.checkLayout("en-US")
		tb.shot("prescreener")
		loc := tb.navigates(w.survey.srv.URL+"/s?tid=",
			chromedp.Click(chromedp.CSS("#"+qid+"-1")), chromedp.Click(chromedp.CSS("button[type=submit]")))
		tid := strings.TrimPrefix(loc, w.survey.srv.URL+"/s?tid=")
		tid = tid[:strings.IndexByte(tid, '&')]
		if n := w.count(`SELECT count(*) FROM sessions s JOIN screener_answers a ON a.session_id = s.id WHERE s.tid = $1`, tid); n != 1 {
			t.Fatalf("session %s with its screener answers not stored", tid)
		}
		tb.shot("prescreener-in-survey")
	})

	t.Run("prescreener fail", func(t *testing.T) {
		tb := b.tab(t)
		user := newUser()
		w.impanel(user)
		o := w.waitOffer(user, screenerCampaign)
		tb.navigates(w.s.PublicURL+"/router/prescreen?token=", chromedp.Navigate(o.OfferEntryURL))
		loc := tb.navigates(partnerBack,
			chromedp.Click(chromedp.CSS("#"+qid+"-2")), chromedp.Click(chromedp.CSS("button[type=submit]")))
		if !strings.HasPrefix(loc, partnerBack+"status=disqualified&reward=0&sech=") {
			t.Fatalf("partner redirect %s", loc)
		}
		if n := w.count(`SELECT count(*) FROM sessions s JOIN participants p ON p.id = s.participant_id
			WHERE p.user_identifier = $1`, user); n != 0 {
			t.Fatal("a disqualified participant got a session")
		}
	})

	t.Run("support", func(t *testing.T) {
		tb := b.tab(t)
		user := newUser()
		w.impanel(user)
		o := w.waitOffer(user, campaignID)
		tb.navigates(w.survey.srv.URL, chromedp.Navigate(o.OfferEntryURL)) // enters the survey
		tb.navigates(w.s.PublicURL+"/support?token=", chromedp.Navigate(o.SupportURL))
		tb.checkLayout("en-US")
		tb.shot("support")
		tb.navigates(w.s.PublicURL+"/support?token=",
			chromedp.Click(chromedp.CSS(fmt.Sprintf("#campaign-%d", campaignID))),
			chromedp.SendKeys(chromedp.CSS("#message"), "The survey froze on page 3."),
			chromedp.SendKeys(chromedp.CSS("#email"), "player@example.com"),
			chromedp.Click(chromedp.CSS("button[type=submit]")),
		)
		if h := tb.str(`document.querySelector("h1").textContent`); h != "Message sent" {
			t.Fatalf("h1 %q", h)
		}
		tb.shot("support-sent")
		if n := w.count(`SELECT count(*) FROM support_requests WHERE campaign_id = $1 AND contact_email = 'player@example.com'`, campaignID); n != 1 {
			t.Fatal("support request not stored")
		}
	})
}
