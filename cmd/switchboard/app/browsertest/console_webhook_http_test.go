package browsertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
)

// waitRows waits until query counts want rows.
func (w *world) waitRows(what string, want int64, query string, args ...any) {
	w.t.Helper()
	for end := time.Now().Add(15 * time.Second); w.count(query, args...) != want; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestConsoleWebhookHTTP: a buyer's webhook page shows where events go, sends a test event
// and lists the deliveries with why they failed; the operator view counts webhooks in the
// backlog, lists each recipient's delivery lag, and names a failing webhook's buyer.
func TestConsoleWebhookHTTP(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := w.console()
	expectSeeOther(t, c.signIn(w.buyer.Email, w.buyer.Token), "/console/campaigns")
	expectConsolePage(t, c.do("GET", "/console/campaigns", nil, nil), http.StatusOK, `<a href="/console/webhook">Webhook</a>`)
	expectConsolePage(t, c.do("GET", "/console/webhook", nil, nil), http.StatusOK, "No webhook URL is set", "No deliveries.")

	// A URL deliveries refuse (stored by an operator; the API refuses it): the activation's
	// event is dead at its first attempt.
	hook := "http://127.0.0.1:9/hooks"
	if err := w.s.DB.Accounts.SetBuyerWebhook(ctx, w.buyer.ID, hook); err != nil {
		t.Fatal(err)
	}
	id, _ := w.campaign("Hooked")
	w.waitRows("the dead webhook", 1, `SELECT count(*) FROM postback_outbox WHERE buyer_id = $1 AND dead_at IS NOT NULL`, w.buyer.ID)
	page := c.do("GET", "/console/webhook", nil, nil)
	expectConsolePage(t, page, http.StatusOK, `<code id="webhook-url">`+hook+`</code>`, "campaign.status_changed",
		"<td>"+strconv.FormatInt(id, 10)+"</td><td>dead</td><td>1</td><td>webhook host resolves to a non-public address</td>",
		`aria-current="page">all</a>`, "given up ")
	expectConsolePage(t, c.do("GET", "/console/webhook?status=delivered", nil, nil), http.StatusOK, "No deliveries.",
		`aria-current="page">delivered</a>`)
	expectConsolePage(t, c.do("GET", "/console/webhook?status=sent", nil, nil), http.StatusUnprocessableEntity, "query parameter status")
	// The test event says the same, and is not stored.
	test := c.do("POST", "/console/webhook/test", url.Values{"csrf": {csrfOf(t, page)}}, nil)
	expectConsolePage(t, test, http.StatusOK, `id="test-result"`, `<td id="test-delivered">no</td>`, "<td>none</td>",
		`<td id="test-error">webhook host resolves to a non-public address</td>`)
	if n := w.count(`SELECT count(*) FROM postback_outbox WHERE buyer_id = $1`, w.buyer.ID); n != 1 {
		t.Fatalf("%d webhook rows after the test event", n)
	}
	expectConsolePage(t, c.do("POST", "/console/webhook/test", url.Values{"csrf": {"forged"}}, nil), http.StatusForbidden)

	// A partner postback failing beside it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if err := w.s.DB.Tx(ctx, func(tx pgx.Tx) error {
		return persistence.EnqueuePostback(ctx, tx, persistence.Postback{TID: "t-lag", Kind: persistence.PostbackOutcome,
			PublisherID: w.pub.ID, URL: "http://" + closed + "/pb"})
	}); err != nil {
		t.Fatal(err)
	}
	w.waitRows("the failed postback", 1, `SELECT count(*) FROM postback_outbox WHERE tid = 't-lag' AND last_error IS NOT NULL`)

	_, token, err := w.s.DB.Operators.CreateOperator(ctx, "Ops Otto")
	if err != nil {
		t.Fatal(err)
	}
	op := w.console()
	form := op.do("GET", "/console/operator/sign-in", nil, nil)
	expectSeeOther(t, op.do("POST", "/console/operator/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "token": {token}}, nil), "/console/operator")
	expectConsolePage(t, op.do("GET", "/console/operator", nil, nil), http.StatusOK,
		`<strong id="backlog">1</strong> undelivered`,
		fmt.Sprintf(`<tr><th scope="row">Puzzle Quest (partner #%d)</th><td>1</td><td>1</td>`, w.pub.ID),
		fmt.Sprintf(`<td>buyer #%d (webhook)</td><td>dead</td><td>1</td><td>webhook host resolves to a non-public address</td>`, w.buyer.ID),
		fmt.Sprintf(`<td>Puzzle Quest (partner #%d)</td><td>retrying</td>`, w.pub.ID), "<td>connection refused</td>")
}
