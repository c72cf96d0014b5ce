package router_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router"
	"github.com/switchboard/switchboard/router/payout"
)

func hmacSHA1(key, msg string) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// runWorker delivers the postback outbox from this process until the test ends.
func (w *world) runWorker() {
	ctx, cancel := context.WithCancel(context.Background())
	wk := payout.NewWorker(w.db.Outbox, w.db.Feed, payout.WorkerConfig{Poll: 50 * time.Millisecond, BaseBackoff: 50 * time.Millisecond}, nil)
	go wk.Run(ctx)
	w.t.Cleanup(func() { cancel(); <-wk.Done() })
}

func (w *world) get(c *http.Client, u string) (*http.Response, string) {
	w.t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		w.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func waitFor(t testing.TB, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEntryAndCallbacks(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	base := s.URL
	link := w.survey.srv.URL + "/s?tid={ID}&r={RESPONDENT_ID}&a={AGE}&g={GENDER}&z={ZIP_CODE}&q={43}&rt={RETARGET_IDENTIFIER}&x={NOPE}&security_hash={LINK_HASH}"
	camp, quota := w.campaign(base, campaignOpts{link: link, quota: 3})
	ps := w.participants(5)
	w.settle()
	w.survey.outcome = func(string) string { return "" } // the test calls back itself

	// Forged, expired and missing tokens.
	for name, u := range map[string]string{
		"missing": base + "/supply_api/v4/entry",
		"forged":  w.entryURL(base, ps[0], camp) + "x",
		"expired": base + "/supply_api/v4/entry?token=" + w.key.Sign(entrytoken.Claims{Kind: entrytoken.KindOffer,
			PublisherID: w.pub.ID, ParticipantID: ps[0], CampaignID: camp, DeviceType: 2, Expires: time.Now().Unix() - 1}),
	} {
		resp, body := w.get(w.noFollow, u)
		if resp.StatusCode != 403 || !strings.Contains(body, `"error"`) {
			t.Errorf("%s token: %d %s, want 403 {\"error\"}", name, resp.StatusCode, body)
		}
	}

	// Entry: 302 to the supplier link with every placeholder.
	resp, _ := w.get(w.noFollow, w.entryURL(base, ps[0], camp))
	if resp.StatusCode != 302 {
		t.Fatalf("entry: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	lu, _ := url.Parse(loc)
	q := lu.Query()
	tid := q.Get("tid")
	if len(tid) != 32 {
		t.Fatalf("tid %q in %s", tid, loc)
	}
	var rid string
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT r.respondent_id FROM respondents r WHERE r.buyer_id = $1 AND r.participant_id = $2`,
		w.buyer.ID, ps[0]).Scan(&rid); err != nil {
		t.Fatal(err)
	}
	want := w.survey.srv.URL + "/s?tid=" + tid + "&r=" + rid + "&a=20&g=M&z=94105&q=1&rt=&x="
	want += "&security_hash=" + hmacSHA1(w.buyer.APISecret, want)
	if loc != want {
		t.Errorf("supplier link\n got %s\nwant %s", loc, want)
	}
	if strings.Contains(loc, "user-") {
		t.Error("the partner's user identifier leaked into the link")
	}
	// The respondent id is stable per participant and buyer.
	resp, _ = w.get(w.noFollow, w.entryURL(base, ps[0], camp))
	lu2, _ := url.Parse(resp.Header.Get("Location"))
	if got := lu2.Query().Get("r"); got != rid {
		t.Errorf("second entry respondent id %q, want %q", got, rid)
	}
	tid2 := lu2.Query().Get("tid")

	// Callbacks.
	cb := func(outcome, tid, secret string) (*http.Response, string) {
		return w.get(w.noFollow, strings.Replace(w.callbackURL(outcome, tid, secret), w.publicURL, base, 1))
	}
	resp, _ = cb("complete", tid, w.buyer.APISecret)
	if resp.StatusCode != 302 {
		t.Fatalf("valid callback: %d", resp.StatusCode)
	}
	first := resp.Header.Get("Location")
	fu, _ := url.Parse(first)
	if !strings.HasPrefix(first, w.partner.srv.URL+"/back?app=1&tid="+tid+"&status=complete&reward=100&sech=") ||
		!payout.VerifySech(fu.RawQuery, w.pub.APISecret) {
		t.Errorf("partner redirect %s", first)
	}
	resp, _ = cb("complete", tid, w.buyer.APISecret)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != first {
		t.Errorf("repeat: %d %s, want the same 302", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ = cb("disqualified", tid, w.buyer.APISecret); resp.StatusCode != 409 {
		t.Errorf("conflicting outcome: %d, want 409", resp.StatusCode)
	}
	if resp, _ = cb("complete", tid2, "wrong-secret"); resp.StatusCode != 403 {
		t.Errorf("wrong hash: %d, want 403", resp.StatusCode)
	}
	missing := strings.Replace(w.callbackURL("complete", tid2, w.buyer.APISecret), w.publicURL, base, 1)
	missing = missing[:strings.Index(missing, "&tr_sech=")]
	if resp, _ = w.get(w.noFollow, missing); resp.StatusCode != 403 {
		t.Errorf("missing hash: %d, want 403", resp.StatusCode)
	}
	if resp, _ = cb("complete", "00000000000000000000000000000000", w.buyer.APISecret); resp.StatusCode != 404 {
		t.Errorf("unknown tid: %d, want 404", resp.StatusCode)
	}
	if resp, _ = cb("finished", tid2, w.buyer.APISecret); resp.StatusCode != 404 {
		t.Errorf("unknown outcome: %d, want 404", resp.StatusCode)
	}
	// Another buyer, correctly signing with its own secret, cannot touch this buyer's tid.
	other, _, err := w.db.Accounts.CreateBuyer(context.Background(), "other@example.test", "Other", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	u := "/router/customers/" + other.CustomerID + "/cps/complete?tid=" + tid2
	resp, _ = w.get(w.noFollow, base+u+"&tr_sech="+hmacSHA1(other.APISecret, w.publicURL+u))
	if resp.StatusCode != 404 {
		t.Errorf("foreign customer: %d, want 404", resp.StatusCode)
	}
	// Older than 7 days: 410.
	if _, err := w.db.Pool.Exec(context.Background(), `UPDATE sessions SET entered_at = now() - interval '8 days' WHERE tid = $1`, tid2); err != nil {
		t.Fatal(err)
	}
	if resp, _ = cb("complete", tid2, w.buyer.APISecret); resp.StatusCode != 410 {
		t.Errorf("expired: %d, want 410", resp.StatusCode)
	}

	// Counts: one complete; the second session still in progress.
	var completes, inProgress, entries int64
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT completes, in_progress, entries FROM campaign_quotas WHERE id = $1`, quota).
		Scan(&completes, &inProgress, &entries); err != nil {
		t.Fatal(err)
	}
	if completes != 1 || inProgress != 1 || entries != 2 {
		t.Errorf("quota counts completes=%d in_progress=%d entries=%d, want 1 1 2", completes, inProgress, entries)
	}

	// Postback of the complete, delivered once and signed.
	waitFor(t, "postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tid, "complete"); return ok })
	pb, _ := w.partner.postback(tid, "complete")
	if pb.Get("payout_usd") != "1.0000" || pb.Get("reward") != "100" || !strings.HasPrefix(pb.Get("user_identifier"), "user-") {
		t.Errorf("postback %v", pb)
	}
	if n := w.partner.badSech.Load(); n != 0 {
		t.Errorf("%d partner requests with a bad sech", n)
	}

	// Fill the quota (3): one more entry fits, the next is over quota.
	resp, _ = w.get(w.noFollow, w.entryURL(base, ps[1], camp))
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), w.survey.srv.URL) {
		t.Fatalf("third entry: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = w.get(w.noFollow, w.entryURL(base, ps[2], camp))
	loc = resp.Header.Get("Location")
	ou, _ := url.Parse(loc)
	if resp.StatusCode != 302 || !strings.HasPrefix(loc, w.partner.srv.URL+"/back?app=1&status=over_quota&reward=0&sech=") ||
		ou.Query().Has("tid") || !payout.VerifySech(ou.RawQuery, w.pub.APISecret) {
		t.Errorf("full quota entry: %d %s", resp.StatusCode, loc)
	}
}

func TestReentryAndRelationships(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	base := s.URL
	w.survey.outcome = func(string) string { return "" }
	never, _ := w.campaign(base, campaignOpts{quota: 100, extra: map[string]any{"reentry_interval": nil}})
	a, qa := w.campaign(base, campaignOpts{quota: 100})
	b, qb := w.campaign(base, campaignOpts{quota: 100})
	w.mustAPI(base, "POST", "/api/v1/campaign_relationships", map[string]any{"campaign_id": a, "related_campaign_id": b}, 201)
	ps := w.participants(3)
	w.settle()
	enter := func(p, c int64) bool {
		resp, _ := w.get(w.noFollow, w.entryURL(base, p, c))
		return strings.HasPrefix(resp.Header.Get("Location"), w.survey.srv.URL)
	}
	if !enter(ps[0], never) || enter(ps[0], never) {
		t.Error("reentry_interval null: first entry must pass, the second must not")
	}
	if !enter(ps[1], a) || enter(ps[1], b) {
		t.Error("relationship: entering a must close b")
	}
	// The database refuses even when the engine's panel does not know the entry yet.
	if _, err := w.db.Sessions.Admit(context.Background(), persistence.Entry{TID: "t-direct", CampaignID: never, PublisherID: w.pub.ID,
		ParticipantID: ps[0], RespondentID: "X"}); err != nil {
		t.Fatal(err)
	}
	adm, err := w.db.Sessions.Admit(context.Background(), persistence.Entry{TID: "t-direct2", CampaignID: never, PublisherID: w.pub.ID,
		ParticipantID: ps[0], RespondentID: "X", QuotaIDs: nil})
	if err != nil || adm.Refused == "" {
		t.Errorf("direct admission without quotas: %+v %v, want refused", adm, err)
	}
	// The database checks a relationship from either side.
	admit := func(tid string, p, c, q int64) string {
		adm, err := w.db.Sessions.Admit(context.Background(), persistence.Entry{TID: tid, CampaignID: c, PublisherID: w.pub.ID,
			ParticipantID: p, RespondentID: "X", QuotaIDs: []int64{q}})
		if err != nil {
			t.Fatal(err)
		}
		return adm.Refused
	}
	if r := admit("t-rel-1", ps[1], b, qb); r != persistence.RefusedRelated {
		t.Errorf("into b after a: refused %q, want %q", r, persistence.RefusedRelated)
	}
	if r := admit("t-rel-2", ps[2], b, qb); r != "" {
		t.Errorf("into b first: refused %q", r)
	}
	if r := admit("t-rel-3", ps[2], a, qa); r != persistence.RefusedRelated {
		t.Errorf("into a after b: refused %q, want %q", r, persistence.RefusedRelated)
	}
}

func TestRedirectTest(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	base := s.URL
	camp, quota := w.campaign(base, campaignOpts{quota: 5})
	w.mustAPI(base, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", camp), map[string]any{"status": 5}, 200)
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	out, err := ops.RedirectTest(context.Background(), w.buyer, camp, nil)
	if err != nil {
		t.Fatal(err)
	}
	testURL := out.(map[string]string)["redirect_test_url"]
	if !strings.HasPrefix(testURL, w.publicURL+"/router/test/") {
		t.Fatalf("redirect_test_url %s", testURL)
	}
	var got []string
	var mu sync.Mutex
	w.survey.outcome = func(string) string { return "quality_term" }
	resp, body := w.get(w.client, testURL)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="outcome">quality_term<`) || !strings.Contains(body, `id="hash">valid<`) {
		t.Errorf("test callback page: %d %s", resp.StatusCode, body)
	}
	// A wrong hash on a test session is reported, not refused.
	w.survey.outcome = func(tid string) string { mu.Lock(); got = append(got, tid); mu.Unlock(); return "" }
	w.get(w.client, testURL)
	resp, body = w.get(w.noFollow, strings.Replace(w.callbackURL("complete", got[0], "bad"), w.publicURL, base, 1))
	if resp.StatusCode != 200 || !strings.Contains(body, `id="hash">NOT valid<`) {
		t.Errorf("test callback with a bad hash: %d %s", resp.StatusCode, body)
	}
	if n := w.count(`SELECT entries + completes + in_progress FROM campaign_quotas WHERE id = $1`, quota); n != 0 {
		t.Errorf("a test session counted: %d", n)
	}
	if resp, _ = w.get(w.noFollow, strings.Replace(testURL, "sig=", "sig=0", 1)); resp.StatusCode != 403 {
		t.Errorf("forged redirect_test_url: %d, want 403", resp.StatusCode)
	}
}

func TestRejectAndReconcile(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	base := s.URL
	camp, quota := w.campaign(base, campaignOpts{quota: 10})
	ps := w.participants(4)
	w.settle()
	outcomes := map[int64]string{ps[0]: "complete", ps[1]: "complete", ps[2]: "disqualified", ps[3]: ""}
	for _, p := range ps {
		w.survey.outcome = func(string) string { return outcomes[p] }
		w.get(w.client, w.entryURL(base, p, camp))
	}
	rows, err := w.db.Pool.Query(context.Background(), `SELECT participant_id, tid FROM sessions WHERE campaign_id = $1`, camp)
	if err != nil {
		t.Fatal(err)
	}
	tidOf := map[int64]string{}
	for rows.Next() {
		var p int64
		var tid string
		_ = rows.Scan(&p, &tid)
		tidOf[p] = tid
	}
	rows.Close()
	quotaCounts := func() (int64, int64) {
		var c, ip int64
		_ = w.db.Pool.QueryRow(context.Background(), `SELECT completes, in_progress FROM campaign_quotas WHERE id = $1`, quota).Scan(&c, &ip)
		return c, ip
	}
	if c, ip := quotaCounts(); c != 2 || ip != 1 {
		t.Fatalf("before reject: completes %d in_progress %d, want 2 1", c, ip)
	}
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	out, err := ops.RejectCompletes(context.Background(), w.buyer, camp,
		[]byte(`{"transaction_ids":["`+tidOf[ps[0]]+`","`+tidOf[ps[2]]+`","nope"]}`))
	if err != nil {
		t.Fatal(err)
	}
	rej := out.(persistence.Rejection)
	if len(rej.RejectedTransactionIDs) != 1 || rej.RejectedTransactionIDs[0] != tidOf[ps[0]] || len(rej.NotFoundTransactionIDs) != 2 || rej.ID == 0 {
		t.Errorf("reject: %+v", rej)
	}
	if c, _ := quotaCounts(); c != 1 {
		t.Errorf("after reject: completes %d, want 1", c)
	}
	waitFor(t, "reversal postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tidOf[ps[0]], "reversed"); return ok })
	if pb, _ := w.partner.postback(tidOf[ps[0]], "reversed"); pb.Get("reward") != "100" || pb.Get("payout_usd") != "1.0000" {
		t.Errorf("reversal %v", pb)
	}
	// Another buyer's campaign is not found.
	other, _, _ := w.db.Accounts.CreateBuyer(context.Background(), "o2@example.test", "O", persistence.EnvStaging)
	if _, err := ops.RejectCompletes(context.Background(), other, camp, []byte(`{"transaction_ids":[]}`)); err == nil {
		t.Error("another buyer rejected completes")
	}

	// Reconcile: accept ps[2] (disqualified) and ps[3] (in progress); ps[1]'s complete is
	// not listed and becomes rejected.
	out, err = ops.Reconcile(context.Background(), w.buyer, camp,
		[]byte(`{"accepted_ids":["`+tidOf[ps[2]]+`","`+tidOf[ps[3]]+`","nope"],"purchase_order":"PO-7"}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := out.(persistence.Reconciliation)
	if rec.AcceptedCount != 2 || rec.RejectedCount != 2 || rec.PurchaseOrder == nil || *rec.PurchaseOrder != "PO-7" || rec.ID == 0 {
		t.Errorf("reconcile: %+v", rec)
	}
	if c, ip := quotaCounts(); c != 2 || ip != 0 {
		t.Errorf("after reconcile: completes %d in_progress %d, want 2 0", c, ip)
	}
	if st := w.count(`SELECT status FROM campaigns WHERE id = $1`, camp); st != 6 {
		t.Errorf("status %d after reconcile, want 6", st)
	}
	waitFor(t, "reversal of the unlisted complete", 10*time.Second, func() bool { _, ok := w.partner.postback(tidOf[ps[1]], "reversed"); return ok })
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// Reconcile turns listed sessions that were not accepted completes into completes that pay
// the complete payout, tells the partner, and a later rejection reverses that payout.
func TestReconcileAcceptances(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	base := s.URL
	ctx := context.Background()
	camp, quota := w.campaign(base, campaignOpts{quota: 10})
	ps := w.participants(5)
	w.settle()
	// ps[0] completes and is rejected before the reconcile lists it; ps[1] and ps[2] get a
	// time-paid outcome, ps[3] no callback; ps[4] completes and is left unlisted.
	outcomes := []string{"complete", "over_quota", "disqualified", "", "complete"}
	for i, p := range ps {
		w.survey.outcome = func(string) string { return outcomes[i] }
		w.get(w.client, w.entryURL(base, p, camp))
	}
	tids, users := make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		if err := w.db.Pool.QueryRow(ctx, `SELECT s.tid, u.user_identifier FROM sessions s JOIN participants u ON u.id = s.participant_id
			WHERE s.campaign_id = $1 AND s.participant_id = $2`, camp, p).Scan(&tids[i], &users[i]); err != nil {
			t.Fatalf("session of participant %d: %v", i, err)
		}
	}
	for i, o := range outcomes {
		if o != "" {
			waitFor(t, "outcome postback of "+o, 10*time.Second, func() bool { _, ok := w.partner.postback(tids[i], o); return ok })
		}
	}
	ops := &router.BuyerOps{Verdicts: w.db.Sessions, Campaigns: w.db.Campaigns, Feed: w.db.Feed, PublicURL: w.publicURL}
	reject := func(tid string) {
		t.Helper()
		if _, err := ops.RejectCompletes(ctx, w.buyer, camp, []byte(`{"transaction_ids":["`+tid+`"]}`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "reversal postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tid, "reversed"); return ok })
	}
	reject(tids[0])

	// The complete payout, from the stored cpi, revenue share and exchange rate (numeric
	// round is half away from zero, as docs/payouts.md's rounding is for positive amounts).
	var wantUSD string
	var wantReward int64
	if err := w.db.Pool.QueryRow(ctx, `SELECT round(c.cpi_cents * p.revenue_share / 100, 4)::text,
		round(round(c.cpi_cents * p.revenue_share / 100, 4) * p.exchange_rate)::bigint
		FROM campaigns c, publishers p WHERE c.id = $1 AND p.id = $2`, camp, w.pub.ID).Scan(&wantUSD, &wantReward); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		var old string
		_ = w.db.Pool.QueryRow(ctx, `SELECT COALESCE(payout_usd::text, 'NULL') FROM sessions WHERE tid = $1`, tids[i]).Scan(&old)
		if old == wantUSD {
			t.Fatalf("session %d already pays %s before the reconcile: the test proves nothing", i, old)
		}
	}

	out, err := ops.Reconcile(ctx, w.buyer, camp, []byte(`{"accepted_ids":["`+strings.Join(tids[:4], `","`)+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec := out.(persistence.Reconciliation); rec.AcceptedCount != 4 || rec.RejectedCount != 1 {
		t.Errorf("reconcile: %+v, want 4 accepted and 1 rejected", rec)
	}
	var completes, inProgress int64
	_ = w.db.Pool.QueryRow(ctx, `SELECT completes, in_progress FROM campaign_quotas WHERE id = $1`, quota).Scan(&completes, &inProgress)
	if completes != 4 || inProgress != 0 {
		t.Errorf("after reconcile: completes %d in_progress %d, want 4 0", completes, inProgress)
	}
	for i, tid := range tids[:4] {
		var outcome, usd string
		var reward int64
		var rejected bool
		if err := w.db.Pool.QueryRow(ctx, `SELECT outcome, rejected, COALESCE(payout_usd::text, 'NULL'), COALESCE(reward, -1)
			FROM sessions WHERE tid = $1`, tid).Scan(&outcome, &rejected, &usd, &reward); err != nil {
			t.Fatal(err)
		}
		if outcome != "complete" || rejected || usd != wantUSD || reward != wantReward {
			t.Errorf("session %d after reconcile: %s rejected=%v payout_usd %s reward %d, want complete, %s, %d",
				i, outcome, rejected, usd, reward, wantUSD, wantReward)
		}
		if n := w.count(`SELECT count(*) FROM postback_outbox WHERE tid = $1 AND kind = 'acceptance'`, tid); n != 1 {
			t.Errorf("session %d: %d acceptance postbacks in the outbox, want 1", i, n)
		}
	}
	checkPostback := func(what string, pb url.Values, status string, user string) {
		t.Helper()
		if pb.Get("status") != status || pb.Get("reward") != fmt.Sprint(wantReward) || pb.Get("payout_usd") != wantUSD ||
			pb.Get("user_identifier") != user {
			t.Errorf("%s postback %v, want status=%s reward=%d payout_usd=%s user_identifier=%s", what, pb, status, wantReward, wantUSD, user)
		}
	}
	for i := 1; i <= 3; i++ {
		waitFor(t, "acceptance postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tids[i], "complete"); return ok })
		pb, _ := w.partner.postback(tids[i], "complete")
		checkPostback(fmt.Sprint("acceptance of session ", i), pb, "complete", users[i])
	}
	// The rejected complete's acceptance carries the same status as its outcome postback, so
	// the partner (deduping on tid and status) cannot tell it apart: check the stored row.
	var accURL string
	if err := w.db.Pool.QueryRow(ctx, `SELECT url FROM postback_outbox WHERE tid = $1 AND kind = 'acceptance'`, tids[0]).Scan(&accURL); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(accURL)
	if err != nil || !payout.VerifySech(u.RawQuery, w.pub.APISecret) {
		t.Errorf("acceptance URL %s: bad signature (%v)", accURL, err)
	}
	checkPostback("acceptance of the rejected complete", u.Query(), "complete", users[0])
	// The unlisted complete is reversed as before.
	waitFor(t, "reversal of the unlisted complete", 10*time.Second, func() bool { _, ok := w.partner.postback(tids[4], "reversed"); return ok })
	pb, _ := w.partner.postback(tids[4], "reversed")
	checkPostback("reversal of the unlisted complete", pb, "reversed", users[4])

	// Rejecting reconciled-in completes reverses the complete payout.
	for _, i := range []int{1, 3} {
		reject(tids[i])
		pb, _ := w.partner.postback(tids[i], "reversed")
		checkPostback(fmt.Sprint("reversal of reconciled-in session ", i), pb, "reversed", users[i])
	}
	if n := w.partner.badSech.Load(); n != 0 {
		t.Errorf("%d requests to the partner with a bad sech", n)
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

func TestAutoCompleteAndBrokenLink(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	base := s.URL
	camp, _ := w.campaign(base, campaignOpts{quota: 2})
	broken, _ := w.campaign(base, campaignOpts{quota: 1000})
	ps := w.participants(60)
	w.settle()
	// Each entry until admitted: on a busy machine the engine may learn of the campaign or a
	// participant after the settle (a refused entry stores nothing, so trying again is safe).
	for _, p := range ps[:2] {
		waitFor(t, "an admitted entry", 10*time.Second, func() bool {
			w.get(w.client, strings.Replace(w.entryURL(base, p, camp), base, w.publicURL, 1))
			return w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND participant_id = $2`, camp, p) > 0
		})
	}
	t.Logf("sessions: %d complete: %d quota completes: %d", w.count(`SELECT count(*) FROM sessions WHERE campaign_id=$1`, camp), w.count(`SELECT count(*) FROM sessions WHERE campaign_id=$1 AND outcome='complete'`, camp), w.count(`SELECT sum(completes) FROM campaign_quotas WHERE campaign_id=$1`, camp))
	waitFor(t, "campaign complete", 10*time.Second, func() bool {
		return w.count(`SELECT status FROM campaigns WHERE id = $1`, camp) == 3
	})
	if w.count(`SELECT count(*) FROM campaigns WHERE id = $1 AND completed_at IS NOT NULL`, camp) != 1 {
		t.Error("completed_at not set")
	}
	// 50 entries with no callback, older than 2 × LOI + 10 minutes: system paused.
	w.survey.outcome = func(string) string { return "" }
	for _, p := range ps[:50] {
		w.get(w.client, strings.Replace(w.entryURL(base, p, broken), base, w.publicURL, 1))
	}
	w.age(broken, "31 minutes")
	if _, err := w.db.Pool.Exec(context.Background(), `UPDATE campaigns SET status_changed_at = now() - interval '1 hour' WHERE id = $1`, broken); err != nil {
		t.Fatal(err)
	}
	s.App.Maintenance.Sweep(context.Background())
	if st := w.count(`SELECT status FROM campaigns WHERE id = $1`, broken); st != 7 {
		t.Errorf("broken link campaign status %d, want 7", st)
	}
	// The sweeper released the stale sessions' places.
	if n := w.count(`SELECT sum(in_progress) FROM campaign_quotas WHERE campaign_id = $1`, broken); n != 0 {
		t.Errorf("in_progress %d after the sweep, want 0", n)
	}
	// /metrics counts the sweep and its time, the release's within it.
	_, body := w.get(w.client, base+"/metrics")
	fams := scrapeFamilies(t, []byte(body))
	value := func(name string) float64 {
		if f := fams[name]; f != nil && len(f.Metric) == 1 {
			if c := f.Metric[0].GetCounter(); c != nil {
				return c.GetValue()
			}
			return f.Metric[0].GetGauge().GetValue()
		}
		t.Errorf("%s: not one sample on /metrics", name)
		return 0
	}
	sweeps, took, release, last := value("switchboard_sweeps_total"), value("switchboard_sweep_seconds_total"),
		value("switchboard_sweep_release_seconds_total"), value("switchboard_sweep_last_duration_seconds")
	if sweeps < 1 || took <= 0 || release <= 0 || release > took || last <= 0 || last > took {
		t.Errorf("sweep metrics: %v sweeps, %v s, release %v s, last %v s; want at least one, release and last within the total", sweeps, took, release, last)
	}
	// Sessions younger than 2 × LOI + 10 minutes keep theirs.
	young, _ := w.campaign(base, campaignOpts{quota: 1000})
	w.settle()
	for _, p := range ps[50:53] {
		w.get(w.client, strings.Replace(w.entryURL(base, p, young), base, w.publicURL, 1))
	}
	w.age(young, "29 minutes")
	s.App.Maintenance.Sweep(context.Background())
	if n := w.count(`SELECT sum(in_progress) FROM campaign_quotas WHERE campaign_id = $1`, young); n != 3 {
		t.Errorf("in_progress %d after sweeping sessions 29 minutes old (LOI 10), want 3", n)
	}
	// A routing table that has about doubled since its last analyze is analyzed, by the
	// process's analyzer (every second) or by the sweep, whichever looks first once the
	// inserts reach the table statistics (analyze_count counts explicit analyzes only, never
	// autovacuum's).
	analyzes := w.count(`SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'respondents'`)
	if _, err := w.db.Pool.Exec(context.Background(), `INSERT INTO respondents (buyer_id, participant_id, respondent_id)
		SELECT 0, -i, 'sweep-' || i FROM generate_series(1, 1500) i`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the analyze of respondents", 10*time.Second, func() bool {
		if w.count(`SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'respondents'`) > analyzes {
			return true
		}
		s.App.Maintenance.Sweep(context.Background())
		return false
	})
}

// TestBrokenLinkFoundByRelease checks where the sweeper looks for broken links: at the
// campaigns whose entries it releases in the sweep (a link becomes broken only when an
// entry's callback window passes without a callback), and at a rotating slice of every
// active campaign (maintenance.Config.BrokenLinkSlices). "quiet" is made to look broken with no
// entry released (its status change moved back after its entries were released): with no
// slices, the sweep that releases "broken"'s entries pauses "broken" and leaves "quiet"; a
// process whose one slice is every campaign pauses "quiet" in its first sweep.
func TestBrokenLinkFoundByRelease(t *testing.T) {
	w := newWorld(t, "")
	start := func(slices int) *apptest.Server {
		s := apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1,
			Configure: func(c *app.Config) { c.Maintenance.BrokenLinkSlices = slices }})
		w.publicURL = s.PublicURL
		return s
	}
	s := start(-1)
	base := s.URL
	quiet, _ := w.campaign(base, campaignOpts{quota: 1000})
	broken, _ := w.campaign(base, campaignOpts{quota: 1000})
	ps := w.participants(50)
	w.settle()
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := w.db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	status := func(id int64) int64 { return w.count(`SELECT status FROM campaigns WHERE id = $1`, id) }
	w.survey.outcome = func(string) string { return "" }
	for _, p := range ps {
		w.get(w.client, strings.Replace(w.entryURL(base, p, quiet), base, w.publicURL, 1))
	}
	// quiet's entries pass their window before its last status change: released, not broken.
	w.age(quiet, "31 minutes")
	s.App.Maintenance.Sweep(ctx)
	if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND released_at IS NULL`, quiet); n != 0 || status(quiet) != 2 {
		t.Fatalf("quiet: %d sessions not released, status %d", n, status(quiet))
	}
	exec(`UPDATE campaigns SET status_changed_at = now() - interval '1 hour' WHERE id = $1`, quiet)

	for _, p := range ps {
		w.get(w.client, strings.Replace(w.entryURL(base, p, broken), base, w.publicURL, 1))
	}
	w.age(broken, "31 minutes")
	exec(`UPDATE campaigns SET status_changed_at = now() - interval '1 hour' WHERE id = $1`, broken)
	s.App.Maintenance.Sweep(ctx)
	if st := status(broken); st != 7 {
		t.Errorf("broken: status %d after the sweep that released its entries, want 7", st)
	}
	if st := status(quiet); st != 2 {
		t.Errorf("quiet: status %d after a sweep that released none of its entries, want 2", st)
	}
	second := start(1)
	second.App.Maintenance.Sweep(ctx)
	if st := status(quiet); st != 7 {
		t.Errorf("quiet: status %d after a sweep whose slice is every campaign, want 7", st)
	}
}

// respondent runs one participant through entry, the survey, the callback and back to the
// partner, through the public URL; it returns the partner's status ("" on a failure).
func (w *world) respondent(p, c int64) (status, tid string, err error) {
	resp, err := w.client.Get(w.entryURL(w.publicURL, p, c))
	if err != nil {
		return "", "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Request.URL.Path != "/back" {
		return "", "", fmt.Errorf("ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	q := resp.Request.URL.Query()
	return q.Get("status"), q.Get("tid"), nil
}

func TestExactFillTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two serve processes")
	}
	w := newWorld(t, "")
	lb := newBalancer(t)
	w.publicURL = lb.srv.URL
	p1, p2 := w.serve(""), w.serve("")
	lb.set(p1.addr, p2.addr)
	const quota, people = 50, 500
	camp, quotaID := w.campaign("http://"+p1.addr, campaignOpts{quota: quota})
	ps := w.participants(people)
	w.settle()

	var mu sync.Mutex
	statuses := map[string]int{}
	var failures []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			st, _, err := w.respondent(p, camp)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err)
				return
			}
			statuses[st]++
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range failures[:min(len(failures), 5)] {
		t.Error(err)
	}
	var completes, inProgress, entries int64
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT completes, in_progress, entries FROM campaign_quotas WHERE id = $1`, quotaID).
		Scan(&completes, &inProgress, &entries); err != nil {
		t.Fatal(err)
	}
	sessions := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome = 'complete'`, camp)
	t.Logf("quota %d, %d participants through 2 serve processes: callbacks accepted (complete) %d, over_quota %d; "+
		"recorded completes %d, complete sessions %d, in_progress %d, entries %d; over-fill %d",
		quota, people, statuses["complete"], statuses["over_quota"], completes, sessions, inProgress, entries, completes-quota)
	if statuses["complete"] != quota || completes != quota || sessions != quota || entries != quota || inProgress != 0 {
		t.Errorf("not an exact fill: accepted %d, completes %d, sessions %d, entries %d, in_progress %d (quota %d)",
			statuses["complete"], completes, sessions, entries, inProgress, quota)
	}
	if statuses["over_quota"] != people-quota {
		t.Errorf("over_quota redirects %d, want %d", statuses["over_quota"], people-quota)
	}
	if n := w.survey.badHash.Load(); n != 0 {
		t.Errorf("%d supplier links with a bad security_hash", n)
	}
	waitFor(t, "campaign complete", 10*time.Second, func() bool { return w.count(`SELECT status FROM campaigns WHERE id = $1`, camp) == 3 })

	// Each process counts its entry decisions on /metrics; together they are the test's.
	verdicts := map[string]float64{}
	for _, p := range []*proc{p1, p2} {
		for k, v := range entryVerdicts(t, w, "http://"+p.addr) {
			verdicts[k] += v
		}
	}
	var refused float64
	for k, v := range verdicts {
		if strings.Contains(k, `verdict="refused"`) {
			refused += v
		}
	}
	t.Logf("switchboard_entries_total over both processes: %v", verdicts)
	if verdicts[`verdict="admitted"`] != quota || refused != people-quota {
		t.Errorf("entry metrics: %v admitted, %v refused; want %d and %d", verdicts[`verdict="admitted"`], refused, quota, people-quota)
	}
}

// entryVerdicts reads the switchboard_entries_total samples of one server's /metrics,
// keyed by their labels.
func entryVerdicts(t *testing.T, w *world, base string) map[string]float64 {
	t.Helper()
	_, body := w.get(w.client, base+"/metrics")
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		labels, rest, ok := strings.Cut(strings.TrimPrefix(line, "switchboard_entries_total{"), "} ")
		if !ok || !strings.HasPrefix(line, "switchboard_entries_total{") {
			continue
		}
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[labels] = v
	}
	return out
}

func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve processes")
	}
	w := newWorld(t, "")
	w.runWorker()
	lb := newBalancer(t)
	w.publicURL = lb.srv.URL
	p1, p2 := w.serve(""), w.serve("")
	lb.set(p1.addr, p2.addr)
	camp, _ := w.campaign("http://"+p1.addr, campaignOpts{quota: 100000})
	const people = 600
	ps := w.participants(people)
	w.settle()

	var mu sync.Mutex
	accepted := map[string]string{} // tid → outcome the partner was told
	failed := 0
	var done sync.WaitGroup
	jobs := make(chan int64)
	var progress sync.WaitGroup
	progress.Add(people / 3)
	var progressed int
	for range 32 {
		done.Add(1)
		go func() {
			defer done.Done()
			for p := range jobs {
				st, tid, err := w.respondent(p, camp)
				mu.Lock()
				if err != nil {
					failed++
				} else if tid != "" {
					accepted[tid] = st
				}
				progressed++
				if progressed <= people/3 {
					progress.Done()
				}
				mu.Unlock()
			}
		}()
	}
	go func() {
		for _, p := range ps {
			jobs <- p
		}
		close(jobs)
	}()
	progress.Wait()
	p2.kill() // kill -9 in the middle of the load
	t.Logf("killed serve %s after %d respondents", p2.addr, people/3)
	lb.set(p1.addr)
	time.Sleep(500 * time.Millisecond)
	p2 = w.serve(p2.addr) // restart on the same address
	lb.set(p1.addr, p2.addr)
	done.Wait()

	// No transaction lost: every tid a survey received is stored.
	w.survey.mu.Lock()
	seen := make([]string, 0, len(w.survey.seen))
	for tid := range w.survey.seen {
		seen = append(seen, tid)
	}
	w.survey.mu.Unlock()
	stored := w.count(`SELECT count(*) FROM sessions WHERE tid = ANY($1)`, seen)
	// No accepted callback lost: every outcome the partner was sent is recorded.
	var tids, outs []string
	for tid, st := range accepted {
		tids, outs = append(tids, tid), append(outs, st)
	}
	recorded := w.count(`SELECT count(*) FROM sessions s JOIN unnest($1::text[], $2::text[]) AS a(tid, st) ON a.tid = s.tid AND s.outcome = a.st`, tids, outs)
	t.Logf("respondents %d: callbacks accepted %d, failed mid-crash %d; supplier links received %d, stored %d; accepted callbacks recorded %d",
		people, len(accepted), failed, len(seen), stored, recorded)
	if stored != int64(len(seen)) {
		t.Errorf("transactions lost: %d of %d stored", stored, len(seen))
	}
	if recorded != int64(len(accepted)) {
		t.Errorf("accepted callbacks lost: %d of %d recorded", recorded, len(accepted))
	}
	// Every outcome stored gets its postback, once.
	outcomes := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome IS NOT NULL`, camp)
	waitFor(t, "every postback", 60*time.Second, func() bool {
		w.partner.mu.Lock()
		defer w.partner.mu.Unlock()
		return int64(len(w.partner.postbacks)) >= outcomes
	})
	w.partner.mu.Lock()
	t.Logf("outcomes stored %d, postbacks received %d (distinct tid/status), duplicates %d", outcomes, len(w.partner.postbacks), w.partner.dupes)
	if int64(len(w.partner.postbacks)) != outcomes {
		t.Errorf("postbacks %d, outcomes %d", len(w.partner.postbacks), outcomes)
	}
	w.partner.mu.Unlock()
	// Delivery is at least once (docs/rules.md §7): a postback the killed process sent but had not
	// recorded is sent again when its 30 s lease runs out. Wait for every record; the
	// idempotent partner applies each tid once (checked above), and repeats can only come from
	// the postbacks the killed process had in hand (at most its worker's delivery slots for
	// one partner).
	waitFor(t, "every postback recorded as delivered", 60*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM postback_outbox WHERE delivered_at IS NULL`) == 0
	})
	w.partner.mu.Lock()
	dupes := w.partner.dupes
	w.partner.mu.Unlock()
	t.Logf("repeated deliveries after the crash: %d", dupes)
	if limit := payout.DefaultPerDestination; dupes > limit {
		t.Errorf("%d repeated postbacks, more than the %d a crashed worker can hold", dupes, limit)
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}
