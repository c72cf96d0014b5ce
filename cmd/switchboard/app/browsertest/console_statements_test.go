package browsertest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleStatementsBrowser: the buyer's statements page shows a month's spend per
// campaign from the ledger, reached from the navigation and paged by month; the operator's
// shows the exchange's month, charges, partner earnings and margin per buyer and per
// partner, and says when it is closed.
func TestConsoleStatementsBrowser(t *testing.T) {
	requireChromium(t)
	w := newWorld(t)
	b := startBrowser(t)
	ctx := context.Background()
	id, _ := w.campaign("Statement habits")
	jan := time.Date(2026, 1, 14, 9, 0, 0, 0, time.UTC)
	for _, e := range []struct {
		session, seq      int64
		kind              string
		charge, earn, rew int64
		at                time.Time
	}{
		{1, 1, "complete", 15000, 9000, 90, jan},
		{2, 1, "complete", 15000, 9000, 90, jan.Add(time.Hour)},
		{3, 1, "screenout", 0, 500, 5, jan.Add(2 * time.Hour)},
		{2, 2, "reversal", -15000, -9000, -90, jan.Add(3 * time.Hour)},
		{4, 1, "complete", 15000, 9000, 90, time.Now()},
	} {
		if _, err := w.s.DB.Pool.Exec(ctx, `INSERT INTO ledger_events (session_id, seq, tid, kind, campaign_id, buyer_id, publisher_id,
			charge_usd, earning_usd, margin_usd, reward, at) VALUES ($1, $2, 'tid' || $1::bigint, $3, $4, $5, $6, $7::bigint, $8::bigint, $7::bigint - $8::bigint, $9, $10)`,
			e.session, e.seq, e.kind, id, w.buyer.ID, w.pub.ID, e.charge, e.earn, e.rew, e.at); err != nil {
			t.Fatal(err)
		}
	}
	_, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Olga")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("buyer", func(t *testing.T) {
		tb := b.tab(t)
		tb.navigates(w.s.PublicURL+"/console/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/sign-in"))
		tb.navigates(w.s.PublicURL+"/console/campaigns", chromedp.SendKeys(chromedp.CSS("#email"), w.buyer.Email),
			chromedp.SendKeys(chromedp.CSS("#token"), w.buyer.Token), chromedp.Click(chromedp.CSS("button[type=submit]")))
		tb.navigates(w.s.PublicURL+"/console/statements", chromedp.Click(chromedp.CSS(`nav a[href="/console/statements"]`)))
		tb.consoleLayout()
		if s := tb.str(`document.querySelector("#total").textContent`); s != "1.5000" {
			t.Fatalf("this month's total %q", s)
		}
		if n := tb.num(`document.querySelectorAll("#next-month").length`); n != 0 {
			t.Fatal("a link to a month after this one")
		}
		tb.navigates(w.s.PublicURL+"/console/statements?month=2026-01", chromedp.Navigate(w.s.PublicURL+"/console/statements?month=2026-01"))
		tb.consoleLayout()
		row := tb.str(`[...document.querySelectorAll("#statement tbody tr")].map(r => r.innerText.replace(/\s+/g, " ")).join("|")`)
		if want := strconv.FormatInt(id, 10) + " 2 1 1.5000"; row != want {
			t.Fatalf("January's lines %q, want %q", row, want)
		}
		if s := tb.str(`document.querySelector("#next-month").textContent`); s != "2026-02" {
			t.Fatalf("next month link %q", s)
		}
		tb.bothWidths("console-statements")
	})

	t.Run("operator", func(t *testing.T) {
		tb := b.tab(t)
		tb.navigates(w.s.PublicURL+"/console/operator/sign-in", chromedp.Navigate(w.s.PublicURL+"/console/operator/sign-in"))
		tb.navigates(w.s.PublicURL+"/console/operator", chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("button[type=submit]")))
		tb.navigates(w.s.PublicURL+"/console/operator/statements", chromedp.Click(chromedp.CSS(`nav a[href="/console/operator/statements"]`)))
		const jan = "/console/operator/statements?month=2026-01"
		tb.navigates(w.s.PublicURL+jan, chromedp.Navigate(w.s.PublicURL+jan))
		tb.consoleLayout()
		got := tb.str(`["#charges", "#earnings", "#margin"].map(s => document.querySelector(s).textContent).join(" ")`)
		if got != "1.5000 0.9500 0.5500" {
			t.Fatalf("January's totals %q", got)
		}
		for _, table := range []string{"buyers", "partners"} {
			if n := tb.num(`document.querySelectorAll("#` + table + ` tbody tr[id]").length`); n != 1 {
				t.Fatalf("%v lines per %s", n, table)
			}
		}
		if s := tb.str(`document.querySelector("#month-state").textContent`); s[:4] != "Open" {
			t.Fatalf("an open month says %q", s)
		}
		if _, _, err := w.s.DB.Ledger.CloseMonth(ctx, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		tb.navigates(w.s.PublicURL+jan, chromedp.Navigate(w.s.PublicURL+jan))
		if s := tb.str(`document.querySelector("#month-state").textContent`); s[:6] != "Closed" {
			t.Fatalf("a closed month says %q", s)
		}
		tb.bothWidths("console-operator-statements")
	})
}
