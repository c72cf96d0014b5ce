package router_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// TestOutcomePayouts proves docs/rules.md §7's partner payout for each of the four outcomes, end
// to end (real HTTP, real PostgreSQL): a complete pays cpi × revenue share (2.00 × 0.5); an
// over_quota and a disqualified pay 0.01 USD a minute spent, capped at 0.10 USD; a
// quality_term pays nothing. The redirect carries tid, status and reward; the postback also
// payout_usd (four decimals) and user_identifier; the session stores the same amounts. Only
// the complete counts toward the quota, and every callback releases its in_progress place.
func TestOutcomePayouts(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	base := s.URL
	ctx := context.Background()
	w.survey.outcome = func(string) string { return "" } // the test sends every callback itself
	camp, quota := w.campaign(base, campaignOpts{quota: 10})
	if cpi := w.count(`SELECT cpi_cents FROM campaigns WHERE id = $1`, camp); cpi != 200 {
		t.Fatalf("campaign cpi %d cents, want the 2.00 bid", cpi)
	}
	cases := []struct {
		outcome string
		spent   string // how long before the callback the respondent entered
		usd     string // "" when paid by time: derived from the stored entry and outcome times
		reward  int64
	}{
		{"complete", "10 minutes", "1.0000", 100},    // 2.00 × 0.5, whatever the time
		{"over_quota", "5 minutes", "", 5},           // 5 min × 0.01 = 0.0500
		{"disqualified", "30 minutes", "0.1000", 10}, // 0.30, capped at 0.10
		{"quality_term", "20 minutes", "0.0000", 0},  // nothing, whatever the time
	}
	ps := w.participants(len(cases))
	w.settle()

	quotaCounts := func() (entries, completes, inProgress int64) {
		t.Helper()
		if err := w.db.Pool.QueryRow(ctx, `SELECT entries, completes, in_progress FROM campaign_quotas WHERE id = $1`, quota).
			Scan(&entries, &completes, &inProgress); err != nil {
			t.Fatal(err)
		}
		return entries, completes, inProgress
	}

	// Every respondent enters first; the tid is the stored session's.
	tids := make([]string, len(cases))
	for i, p := range ps {
		resp, _ := w.get(w.noFollow, w.entryURL(base, p, camp))
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, w.survey.srv.URL+"/s?") {
			t.Fatalf("entry %d: %d %s, want 302 to the supplier link", i, resp.StatusCode, loc)
		}
		if err := w.db.Pool.QueryRow(ctx, `SELECT tid FROM sessions WHERE campaign_id = $1 AND participant_id = $2`, camp, p).
			Scan(&tids[i]); err != nil {
			t.Fatalf("session of entry %d: %v", i, err)
		}
		if u, _ := url.Parse(loc); u.Query().Get("tid") != tids[i] {
			t.Errorf("entry %d: supplier link %s, want tid %s", i, loc, tids[i])
		}
	}
	if e, c, ip := quotaCounts(); e != 4 || c != 0 || ip != 4 {
		t.Fatalf("after 4 entries: entries %d completes %d in_progress %d, want 4 0 4", e, c, ip)
	}

	wantCompletes := int64(0)
	for i, tc := range cases {
		tid := tids[i]
		var user string
		if err := w.db.Pool.QueryRow(ctx, `SELECT user_identifier FROM participants WHERE id = $1`, ps[i]).Scan(&user); err != nil {
			t.Fatal(err)
		}
		if _, err := w.db.Pool.Exec(ctx, `UPDATE sessions SET entered_at = now() - $2::interval WHERE tid = $1`, tid, tc.spent); err != nil {
			t.Fatal(err)
		}
		resp, _ := w.get(w.noFollow, w.callbackURL(tc.outcome, tid, w.buyer.APISecret))
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("%s callback: %d, want 302", tc.outcome, resp.StatusCode)
		}

		// The stored outcome: a time-based payout is what the stored entry and outcome times
		// give, rounded down to 0.0001 USD (docs/payouts.md), and must be a 5-minute one.
		var outcome, storedUSD string
		var storedReward int64
		var enteredAt, outcomeAt time.Time
		if err := w.db.Pool.QueryRow(ctx, `SELECT outcome, payout_usd::text, reward, entered_at, outcome_at FROM sessions WHERE tid = $1`, tid).
			Scan(&outcome, &storedUSD, &storedReward, &enteredAt, &outcomeAt); err != nil {
			t.Fatal(err)
		}
		wantUSD := tc.usd
		if wantUSD == "" {
			spent := outcomeAt.Sub(enteredAt)
			if spent < 5*time.Minute || spent >= 5*time.Minute+6*time.Second {
				t.Fatalf("%s: %v between entry and callback, want 5 minutes and at most a few seconds", tc.outcome, spent)
			}
			wantUSD = timeSpentUSD(spent) // "0.0500" unless the callback took over 0.6 s
		}
		if outcome != tc.outcome || storedUSD != wantUSD || storedReward != tc.reward {
			t.Errorf("%s: stored outcome %s payout_usd %s reward %d, want %s %s %d",
				tc.outcome, outcome, storedUSD, storedReward, tc.outcome, wantUSD, tc.reward)
		}

		// The redirect: the configured query first, then tid, status, reward and sech, last.
		loc := resp.Header.Get("Location")
		wantPrefix := fmt.Sprintf("%s/back?app=1&tid=%s&status=%s&reward=%d&sech=", w.partner.srv.URL, tid, tc.outcome, tc.reward)
		lu, err := url.Parse(loc)
		if err != nil || !strings.HasPrefix(loc, wantPrefix) || len(loc) != len(wantPrefix)+64 ||
			!payout.VerifySech(lu.RawQuery, w.pub.APISecret) {
			t.Errorf("%s redirect\n got %s\nwant %s<64 hex digits of a valid sech>", tc.outcome, loc, wantPrefix)
		}

		// The postback: the same fields plus payout_usd and user_identifier.
		waitFor(t, tc.outcome+" postback", 10*time.Second, func() bool { _, ok := w.partner.postback(tid, tc.outcome); return ok })
		pb, _ := w.partner.postback(tid, tc.outcome)
		if pb.Get("tid") != tid || pb.Get("status") != tc.outcome || pb.Get("reward") != fmt.Sprint(tc.reward) ||
			pb.Get("payout_usd") != wantUSD || pb.Get("user_identifier") != user {
			t.Errorf("%s postback %v, want tid=%s status=%s reward=%d payout_usd=%s user_identifier=%s",
				tc.outcome, pb, tid, tc.outcome, tc.reward, wantUSD, user)
		}

		// Counts: the callback released the place; only the complete counts.
		if tc.outcome == "complete" {
			wantCompletes++
		}
		wantInProgress := int64(len(cases) - i - 1)
		if e, c, ip := quotaCounts(); e != 4 || c != wantCompletes || ip != wantInProgress {
			t.Errorf("after the %s callback: entries %d completes %d in_progress %d, want 4 %d %d",
				tc.outcome, e, c, ip, wantCompletes, wantInProgress)
		}
	}
	if n := w.partner.badSech.Load(); n != 0 {
		t.Errorf("%d requests to the partner with a bad sech", n)
	}
}

// timeSpentUSD is docs/rules.md §7's time-based payout of d as a payout_usd string: 0.01 USD a
// minute, pro rata to the millisecond, rounded down to 0.0001 USD, capped at 0.10 USD.
func timeSpentUSD(d time.Duration) string {
	v := max(min(d.Milliseconds()*100/60000, 1000), 0) // ten-thousandths of a dollar
	return fmt.Sprintf("%d.%04d", v/10000, v%10000)
}

// rulesEnter sends participant p to the entry of campaign c through base without following
// the redirect. It returns the transaction id of an admitted entry (302 to the supplier
// link), or "" for a refused one, after checking that the refusal is docs/rules.md §6's: 302 to
// the publisher's redirect URL with status=over_quota, reward=0, no tid, and a valid sech.
func rulesEnter(t *testing.T, w *world, base string, p, c int64) string {
	t.Helper()
	resp, _ := w.get(w.noFollow, w.entryURL(base, p, c))
	loc := resp.Header.Get("Location")
	u, err := url.Parse(loc)
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("entry of participant %d: %d %s, want 302", p, resp.StatusCode, loc)
	}
	if strings.HasPrefix(loc, w.survey.srv.URL+"/s?") {
		tid := u.Query().Get("tid")
		if n := w.count(`SELECT count(*) FROM sessions WHERE tid = $1 AND campaign_id = $2 AND participant_id = $3`, tid, c, p); n != 1 {
			t.Fatalf("admitted entry %s: %d stored sessions, want 1", loc, n)
		}
		return tid
	}
	if !strings.HasPrefix(loc, w.partner.srv.URL+"/back?app=1&status=over_quota&reward=0&sech=") || u.Query().Has("tid") ||
		!payout.VerifySech(u.RawQuery, w.pub.APISecret) {
		t.Fatalf("refused entry of participant %d: %s, want the signed over_quota redirect with reward=0 and no tid", p, loc)
	}
	return ""
}

// rulesAdmit asks the database arbiter alone (no engine, no HTTP) to admit p into quota q of
// campaign c, and returns the refusal reason ("" when admitted, which stores a session).
func rulesAdmit(t *testing.T, w *world, tid string, p, c, q int64) string {
	t.Helper()
	adm, err := w.db.Sessions.Admit(context.Background(), persistence.Entry{TID: tid, CampaignID: c, PublisherID: w.pub.ID,
		ParticipantID: p, RespondentID: "X", QuotaIDs: []int64{q}})
	if err != nil {
		t.Fatal(err)
	}
	return adm.Refused
}

// TestEntryCaps proves that entry re-checks the caps of docs/rules.md §4–§6 and refuses with the
// over_quota redirect (§6): max_daily_completes (§5.7: the day's UTC completes must be below
// it), reentry_interval (§4: at least n minutes between two entries of one respondent) and
// a click-balanced quota (§5: it counts entries, not completes).
func TestEntryCaps(t *testing.T) {
	t.Run("max_daily_completes", func(t *testing.T) {
		w := newWorld(t, "")
		s := w.startInProcess()
		base := s.URL
		camp, quota := w.campaign(base, campaignOpts{quota: 100, extra: map[string]any{"max_daily_completes": 2}})
		ps := w.participants(3)
		w.settle()
		for i, p := range ps[:2] { // the survey sends each straight back complete
			if st, tid, err := w.respondent(p, camp); err != nil || st != "complete" || tid == "" {
				t.Fatalf("respondent %d: status %q tid %q %v, want a complete", i, st, tid, err)
			}
		}
		today := `SELECT COALESCE(sum(completes), 0) FROM campaign_daily_counts WHERE campaign_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`
		if n := w.count(today, camp); n != 2 {
			t.Fatalf("today's completes %d, want 2", n)
		}
		if tid := rulesEnter(t, w, base, ps[2], camp); tid != "" {
			t.Errorf("entry admitted (tid %s) with 2 completes today and max_daily_completes 2", tid)
		}
		if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1`, camp); n != 2 {
			t.Errorf("%d sessions, want 2", n)
		}
		// The database refuses on its own, whatever the engine's mirror says ...
		if r := rulesAdmit(t, w, "daily-direct-1", ps[2], camp, quota); r != persistence.RefusedDaily {
			t.Errorf("arbiter with the daily cap reached: refused %q, want %q", r, persistence.RefusedDaily)
		}
		// ... and counts only today's (UTC) completes.
		if _, err := w.db.Pool.Exec(context.Background(), `UPDATE campaign_daily_counts SET day = day - 1 WHERE campaign_id = $1`, camp); err != nil {
			t.Fatal(err)
		}
		if r := rulesAdmit(t, w, "daily-direct-2", ps[2], camp, quota); r != "" {
			t.Errorf("arbiter with yesterday's completes at the cap: refused %q, want admitted", r)
		}
	})

	t.Run("reentry_interval", func(t *testing.T) {
		w := newWorld(t, "")
		s := w.startInProcess()
		w.survey.outcome = func(string) string { return "" }
		camp, quota := w.campaign(s.URL, campaignOpts{quota: 100, extra: map[string]any{"reentry_interval": 30}})
		p := w.participants(1)[0]
		w.settle()
		first := rulesEnter(t, w, s.URL, p, camp)
		if first == "" {
			t.Fatal("first entry refused")
		}
		if tid := rulesEnter(t, w, s.URL, p, camp); tid != "" {
			t.Errorf("second entry at once admitted (tid %s), reentry_interval 30", tid)
		}
		enteredAgo := func(d string) {
			t.Helper()
			if _, err := w.db.Pool.Exec(context.Background(), `UPDATE sessions SET entered_at = now() - $2::interval WHERE tid = $1`, first, d); err != nil {
				t.Fatal(err)
			}
		}
		enteredAgo("29 minutes")
		if r := rulesAdmit(t, w, "reentry-29", p, camp, quota); r != persistence.RefusedReentry {
			t.Errorf("arbiter 29 minutes after the first entry: refused %q, want %q", r, persistence.RefusedReentry)
		}
		enteredAgo("31 minutes")
		// The running server's engine remembers the first entry at its real time, seconds ago;
		// a server started now loads the entry history from the database, 31 minutes old.
		s2 := w.startInProcess()
		w.settle()
		if tid := rulesEnter(t, w, s2.URL, p, camp); tid == "" {
			t.Error("entry 31 minutes after the first refused, reentry_interval 30")
		}
		if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND participant_id = $2`, camp, p); n != 2 {
			t.Errorf("%d sessions of the participant, want 2", n)
		}
	})

	t.Run("click_balanced", func(t *testing.T) {
		w := newWorld(t, "")
		s := w.startInProcess()
		base := s.URL
		w.survey.outcome = func(string) string { return "" }
		camp, quota := w.campaign(base, campaignOpts{quota: 2, clickBalanced: true})
		// A second quota that no participant matches keeps the campaign active once the
		// click-balanced one is full, so that the refusals below are the quota's.
		w.mustAPI(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", camp), map[string]any{"num_respondents": 100,
			"campaign_qualifications": []any{map[string]any{"question_id": 45, "pre_codes": []string{"00000"}}}}, 201)
		ps := w.participants(4)
		w.settle()
		counts := func() (entries, completes, inProgress int64) {
			t.Helper()
			if err := w.db.Pool.QueryRow(context.Background(), `SELECT entries, completes, in_progress FROM campaign_quotas WHERE id = $1`, quota).
				Scan(&entries, &completes, &inProgress); err != nil {
				t.Fatal(err)
			}
			return entries, completes, inProgress
		}
		var tids []string
		for i, p := range ps[:2] {
			tid := rulesEnter(t, w, base, p, camp)
			if tid == "" {
				t.Fatalf("entry %d refused below the click-balanced quota of 2", i)
			}
			tids = append(tids, tid)
		}
		if tid := rulesEnter(t, w, base, ps[2], camp); tid != "" {
			t.Errorf("third entry admitted (tid %s) into a click-balanced quota of 2", tid)
		}
		if e, c, ip := counts(); e != 2 || c != 0 || ip != 2 {
			t.Errorf("entries %d completes %d in_progress %d, want 2 0 2", e, c, ip)
		}
		// Both are sent back disqualified: nothing in progress, no complete, yet the quota
		// stays full, because it counts entries.
		for _, tid := range tids {
			if resp, _ := w.get(w.noFollow, w.callbackURL("disqualified", tid, w.buyer.APISecret)); resp.StatusCode != http.StatusFound {
				t.Fatalf("disqualified callback: %d, want 302", resp.StatusCode)
			}
		}
		if e, c, ip := counts(); e != 2 || c != 0 || ip != 0 {
			t.Errorf("after the callbacks: entries %d completes %d in_progress %d, want 2 0 0", e, c, ip)
		}
		w.settle()
		if tid := rulesEnter(t, w, base, ps[3], camp); tid != "" {
			t.Errorf("entry admitted (tid %s) after the callbacks freed the places: a click-balanced quota counts entries", tid)
		}
		if r := rulesAdmit(t, w, "click-direct", ps[3], camp, quota); r != persistence.RefusedQuota {
			t.Errorf("arbiter: refused %q, want %q", r, persistence.RefusedQuota)
		}
		if st := w.count(`SELECT status FROM campaigns WHERE id = $1`, camp); st != 2 {
			t.Errorf("campaign status %d, want 2 (active: the refusals are the quota's)", st)
		}
	})
}
