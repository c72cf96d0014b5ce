package router_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router"
	"github.com/switchboard/switchboard/router/payout"
)

// qualityWorld is a world whose partner has an API token (for GET /campaigns) and whose
// survey's outcome can be switched.
type qualityWorld struct {
	*world
	s       *apptest.Server
	pubTok  string
	outcome atomic.Value // string: what the survey answers ("" = no callback)
}

func newQualityWorld(t *testing.T, configure func(*app.Config)) *qualityWorld {
	t.Helper()
	w := newWorld(t, "")
	qw := &qualityWorld{world: w}
	qw.outcome.Store("complete")
	w.survey.outcome = func(string) string { return qw.outcome.Load().(string) }
	qw.s = apptest.Start(t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1, Configure: configure})
	w.publicURL = qw.s.PublicURL
	ctx := context.Background()
	pub, tok, err := w.db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Quality partner", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: w.partner.srv.URL + "/back?app=1", PostbackURL: w.partner.srv.URL + "/pb",
		Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	w.pub, qw.pubTok = pub, tok
	w.partner.secret = pub.APISecret
	if err := qw.s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	return qw
}

func (qw *qualityWorld) user(id int64) string {
	var u string
	if err := qw.db.Pool.QueryRow(context.Background(), `SELECT user_identifier FROM participants WHERE id = $1`, id).Scan(&u); err != nil {
		qw.t.Fatal(err)
	}
	return u
}

type eligibility struct {
	Surveys []struct {
		Identifier string `json:"identifier"`
	} `json:"surveys"`
	Eligibility struct {
		IsEligible bool   `json:"is_eligible"`
		Reason     int    `json:"reason"`
		Comment    string `json:"comment"`
	} `json:"player_eligibility"`
}

func (qw *qualityWorld) offers(user string) eligibility {
	qw.t.Helper()
	req := qw.s.NewRequest(qw.t, "GET", "/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=2", nil)
	req.Header.Set("X-Api-Token", qw.pubTok)
	req.Header.Set("X-User-Identifier", user)
	var e eligibility
	qw.s.Send(qw.t, req).Expect(qw.t, 200).Decode(qw.t, &e)
	return e
}

// enter follows an offer through entry, the survey and its callback back to the partner,
// and returns the partner's redirect query.
func (qw *qualityWorld) enter(entryURL string) url.Values {
	qw.t.Helper()
	resp, err := qw.client.Get(entryURL)
	if err != nil {
		qw.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	if resp.StatusCode != 200 {
		qw.t.Fatalf("entry chain ended with %d at %s", resp.StatusCode, resp.Request.URL)
	}
	return resp.Request.URL.Query()
}

func (qw *qualityWorld) tids(participant int64) []string {
	rows, err := qw.db.Pool.Query(context.Background(), `SELECT tid FROM sessions WHERE participant_id = $1 ORDER BY id`, participant)
	if err != nil {
		qw.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var tid string
		if err := rows.Scan(&tid); err != nil {
			qw.t.Fatal(err)
		}
		out = append(out, tid)
	}
	return out
}

func (qw *qualityWorld) csv(method, path string, body any) [][]string {
	qw.t.Helper()
	req := qw.s.NewRequest(qw.t, method, path, body)
	req.SetBasicAuth(qw.buyer.Email, qw.token)
	req.Header.Set("Accept", "text/csv")
	r := qw.s.Send(qw.t, req).Expect(qw.t, 200)
	recs, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil {
		qw.t.Fatal(err)
	}
	return recs
}

func column(recs [][]string, name string) map[string]string {
	idx := -1
	for i, h := range recs[0] {
		if h == name {
			idx = i
		}
	}
	out := map[string]string{}
	if idx < 0 {
		return out
	}
	for _, r := range recs[1:] {
		out[r[0]] = r[idx]
	}
	return out
}

func TestQualitySpeedersBlockAndUnblock(t *testing.T) {
	qw := newQualityWorld(t, nil)
	base := qw.publicURL
	c, _ := qw.campaign(base, campaignOpts{quota: 100})
	ids := qw.participants(2)
	fast, slow := ids[0], ids[1]
	user := qw.user(fast)
	qw.settle()
	if e := qw.offers(user); len(e.Surveys) == 0 {
		t.Fatalf("no offers before: %+v", e)
	}

	// A complete that took long enough is not a speeder: the survey does not call back; the
	// session is aged, then the buyer calls back.
	qw.outcome.Store("")
	qw.enter(qw.entryURL(base, slow, c))
	slowTID := qw.tids(slow)[0]
	if _, err := qw.db.Pool.Exec(context.Background(), `UPDATE sessions SET entered_at = now() - interval '3 minutes' WHERE tid = $1`, slowTID); err != nil {
		t.Fatal(err)
	}
	resp, err := qw.noFollow.Get(qw.callbackURL("complete", slowTID, qw.buyer.APISecret))
	if err != nil || resp.StatusCode != 302 {
		t.Fatalf("slow callback: %v %v", resp, err)
	}
	resp.Body.Close()

	// Three completes faster than 25% of the 10-minute LOI: speeders; the third blocks.
	qw.outcome.Store("complete")
	early := qw.entryURL(base, fast, c) // issued before the block
	for i := range 3 {
		if q := qw.enter(qw.entryURL(base, fast, c)); q.Get("status") != "complete" {
			t.Fatalf("speeder %d: partner got %v", i, q)
		}
	}
	e := qw.offers(user)
	if len(e.Surveys) != 0 || e.Eligibility.IsEligible || e.Eligibility.Reason != 1 || !strings.Contains(e.Eligibility.Comment, "speeding") {
		t.Fatalf("blocked speeder offers: %+v", e)
	}
	// Tokens issued before the block, and any later one, end at the partner as quality_term.
	for _, u := range []string{early, qw.entryURL(base, fast, c)} {
		resp, err := qw.noFollow.Get(u)
		if err != nil || resp.StatusCode != 302 {
			t.Fatalf("blocked entry: %v %v", resp, err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		lu, _ := url.Parse(loc)
		q := lu.Query()
		if !strings.HasPrefix(loc, qw.partner.srv.URL+"/back?app=1&") || q.Get("status") != outcome.QualityTerm ||
			q.Get("reward") != "0" || q.Get("tid") != "" || !payout.VerifySech(lu.RawQuery, qw.pub.APISecret) {
			t.Fatalf("blocked entry redirect %s", loc)
		}
	}
	if n := len(qw.tids(fast)); n != 3 {
		t.Fatalf("blocked participant has %d sessions, want 3", n)
	}

	// The exports mark the speeders.
	demo := qw.csv("POST", fmt.Sprintf("/api/v1/campaigns/%d/export_demographics", c), map[string]any{})
	if h := demo[0]; h[len(h)-1] != "speeder" {
		t.Fatalf("demographics header %v", h)
	}
	sp := column(demo, "speeder")
	for _, tid := range qw.tids(fast) {
		if sp[tid] != "true" {
			t.Errorf("demographics: speeder %s = %q", tid, sp[tid])
		}
	}
	if sp[slowTID] != "false" {
		t.Errorf("demographics: slow complete = %q", sp[slowTID])
	}
	var project int64
	if err := qw.db.Pool.QueryRow(context.Background(), `SELECT project_id FROM campaigns WHERE id = $1`, c).Scan(&project); err != nil {
		t.Fatal(err)
	}
	res := qw.csv("GET", fmt.Sprintf("/insights_api/projects/%d/campaigns/%d", project, c), nil)
	if h := res[0]; h[len(h)-1] != "speeder" {
		t.Fatalf("results header %v", h)
	}
	sp = column(res, "speeder")
	if len(sp) != 4 || sp[slowTID] != "false" || sp[qw.tids(fast)[2]] != "true" {
		t.Errorf("results speeder column %v", sp)
	}

	metrics := string(qw.s.Send(t, qw.s.NewRequest(t, "GET", "/metrics", nil)).Body)
	for _, want := range []string{
		fmt.Sprintf(`switchboard_quality_speeders_total{publisher="%d"} 3`, qw.pub.ID),
		fmt.Sprintf(`switchboard_quality_blocks_total{publisher="%d"} 1`, qw.pub.ID),
		fmt.Sprintf(`switchboard_quality_blocked_participants{publisher="%d"} 1`, qw.pub.ID),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// The operator's view names the rule class and the evidence; lifting the block restores
	// offers and entry at once.
	rep, err := qw.db.Quality.QualityReportOf(context.Background(), qw.pub.ID, user)
	if err != nil || !rep.Blocked || rep.Block.RuleClass != quality.ClassSpeeding || len(rep.Signals) != 3 {
		t.Fatalf("report %+v %v", rep, err)
	}
	if _, err := qw.db.Quality.UnblockParticipant(context.Background(), qw.pub.ID, user, "reviewed"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for len(qw.offers(user).Surveys) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("offers not back within 1 s of the unblock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A token issued before the block still does not work; a new one does.
	resp, err = qw.noFollow.Get(early)
	if err != nil || !strings.Contains(resp.Header.Get("Location"), "status=quality_term") {
		t.Fatalf("pre-block token after unblock: %v %v", resp, err)
	}
	resp.Body.Close()
	time.Sleep(1100 * time.Millisecond) // a token of a later second than the block
	qw.outcome.Store("")
	resp, err = qw.noFollow.Get(qw.entryURL(base, fast, c))
	if err != nil || !strings.HasPrefix(resp.Header.Get("Location"), qw.survey.srv.URL) {
		t.Fatalf("entry after unblock: %v %v", resp.Header.Get("Location"), err)
	}
	resp.Body.Close()
}

func TestQualityOutcomes(t *testing.T) {
	qw := newQualityWorld(t, func(c *app.Config) { c.RouterQuality.SpeederFraction = -1 })
	base := qw.publicURL
	c, _ := qw.campaign(base, campaignOpts{quota: 100})
	ids := qw.participants(2)
	termed, rejected := ids[0], ids[1]
	qw.settle()

	// Three quality_term callbacks block.
	qw.outcome.Store("quality_term")
	for i := range 3 {
		if e := qw.offers(qw.user(termed)); e.Eligibility.Reason == 1 {
			t.Fatalf("blocked after %d quality terms", i)
		}
		if q := qw.enter(qw.entryURL(base, termed, c)); q.Get("status") != "quality_term" {
			t.Fatalf("partner got %v", q)
		}
	}
	if e := qw.offers(qw.user(termed)); e.Eligibility.Reason != 1 || !strings.Contains(e.Eligibility.Comment, "quality terminations") {
		t.Fatalf("after three quality terms: %+v", e)
	}

	// Three completes later rejected (reject_completes, then reconcile) block.
	qw.outcome.Store("complete")
	for range 4 {
		qw.enter(qw.entryURL(base, rejected, c))
	}
	tids := qw.tids(rejected)
	qw.mustAPI(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/reject_completes", c), map[string]any{"transaction_ids": tids[:2]}, 200)
	if e := qw.offers(qw.user(rejected)); e.Eligibility.Reason == 1 {
		t.Fatalf("blocked after two rejections: %+v", e)
	}
	qw.mustAPI(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/reconcile", c), map[string]any{"accepted_ids": tids[3:]}, 200)
	if e := qw.offers(qw.user(rejected)); e.Eligibility.Reason != 1 || !strings.Contains(e.Eligibility.Comment, "rejected completes") {
		t.Fatalf("after three rejections: %+v", e)
	}
	rep, err := qw.db.Quality.QualityReportOf(context.Background(), qw.pub.ID, qw.user(rejected))
	if err != nil || rep.Block == nil || rep.Block.RuleClass != quality.ClassOutcomes || len(rep.Signals) != 3 {
		t.Fatalf("report %+v %v", rep, err)
	}
}

func TestIsSpeeder(t *testing.T) {
	for _, c := range []struct {
		elapsed time.Duration
		loi     int
		frac    float64
		want    bool
	}{
		{2*time.Minute + 29*time.Second, 10, 0.25, true},
		{2*time.Minute + 30*time.Second, 10, 0.25, false},
		{time.Second, 10, -1, false},
		{time.Second, 0, 0.25, false},
	} {
		if got := router.IsSpeeder(c.elapsed, c.loi, c.frac); got != c.want {
			t.Errorf("IsSpeeder(%v, %d, %v) = %v", c.elapsed, c.loi, c.frac, got)
		}
	}
}
