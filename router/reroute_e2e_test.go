package router_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// Re-routing of screen-outs (docs/rules.md §10), end to end: real HTTP through the entry,
// the buyer's survey and its callbacks, real PostgreSQL, the partner's redirect and postback
// receivers.

// setReroute gives the world's publisher reroute_attempts n; call it before any server
// starts (servers load publishers at start).
func (w *world) setReroute(n int) {
	w.t.Helper()
	p, err := w.db.Accounts.UpdatePublisher(context.Background(), w.pub.ID, persistence.PublisherChange{RerouteAttempts: &n})
	if err != nil {
		w.t.Fatal(err)
	}
	w.pub = p
}

// outcomesByCampaign makes the survey answer each session with its campaign's outcome in m
// ("" or missing: no callback).
func (w *world) outcomesByCampaign(m map[int64]string) {
	w.survey.outcome = func(tid string) string {
		var c int64
		if err := w.db.Pool.QueryRow(context.Background(), `SELECT campaign_id FROM sessions WHERE tid = $1`, tid).Scan(&c); err != nil {
			return ""
		}
		return m[c]
	}
}

// walk follows a respondent's redirects from start to the partner's redirect URL, retrying
// a request that fails or answers 5xx (a browser's reload while a server restarts), and
// returns the partner redirect's query.
func (w *world) walk(start string) (url.Values, error) {
	u := start
	for range 50 {
		var resp *http.Response
		var err error
		for range 100 {
			resp, err = w.noFollow.Get(u)
			if err == nil && resp.StatusCode < 500 {
				break
			}
			if err == nil {
				resp.Body.Close()
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		at := resp.Request.URL
		if at.Path == "/back" {
			return at.Query(), nil
		}
		if resp.StatusCode >= 500 {
			return nil, fmt.Errorf("%s: %d", u, resp.StatusCode)
		}
		if resp.StatusCode != http.StatusFound {
			return nil, fmt.Errorf("%s: %d, want 302", u, resp.StatusCode)
		}
		next, err := at.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, err
		}
		u = next.String()
	}
	return nil, fmt.Errorf("more than 50 redirects from %s", start)
}

// hopRow is a stored session of a participant, in chain order.
type hopRow struct {
	tid     string
	camp    int64
	chain   int64
	hop     int
	outcome string
}

func (w *world) hops(p int64) []hopRow {
	w.t.Helper()
	rows, err := w.db.Pool.Query(context.Background(), `SELECT tid, campaign_id, COALESCE(chain_id, 0), COALESCE(chain_hop, 0),
		COALESCE(outcome, '') FROM sessions WHERE participant_id = $1 ORDER BY id`, p)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	var out []hopRow
	for rows.Next() {
		var h hopRow
		if err := rows.Scan(&h.tid, &h.camp, &h.chain, &h.hop, &h.outcome); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// postbacksOf returns the partner's postbacks of the tids.
func (w *world) postbacksOf(tids ...string) []url.Values {
	w.partner.mu.Lock()
	defer w.partner.mu.Unlock()
	var out []url.Values
	for k, q := range w.partner.postbacks {
		tid, _, _ := strings.Cut(k, "|")
		for _, t := range tids {
			if t == tid {
				out = append(out, q)
			}
		}
	}
	return out
}

func (w *world) redirectsOf(tids ...string) []url.Values {
	w.partner.mu.Lock()
	defer w.partner.mu.Unlock()
	var out []url.Values
	for _, q := range w.partner.redirects {
		for _, t := range tids {
			if q.Get("tid") == t {
				out = append(out, q)
			}
		}
	}
	return out
}

// checkChain verifies one participant's chain: its sessions are hops 1..n of one chain over
// the campaigns want, with the outcomes wantOut; the partner got exactly one redirect (final,
// given) and, once the worker delivered, exactly one postback, both of the last session with
// attempts = n.
func (w *world) checkChain(p int64, final url.Values, want []int64, wantOut []string) {
	w.t.Helper()
	if n := len(w.hops(p)); n != len(want) {
		w.t.Errorf("participant %d: %d sessions, want %d", p, n, len(want))
	}
	w.checkFinalChain(p, final, want, wantOut)
}

// checkFinalChain is checkChain for the chain of the final redirect's tid only: the
// participant may have other sessions (an entry retried after a server died before
// answering is a new entry, as without re-routing).
func (w *world) checkFinalChain(p int64, final url.Values, want []int64, wantOut []string) {
	w.t.Helper()
	var hs []hopRow
	for _, h := range w.hops(p) {
		if h.chain != 0 && h.chain == w.count(`SELECT COALESCE(chain_id, 0) FROM sessions WHERE tid = $1`, final.Get("tid")) {
			hs = append(hs, h)
		}
	}
	if len(hs) != len(want) {
		w.t.Fatalf("participant %d: %d sessions %+v, want %d", p, len(hs), hs, len(want))
	}
	tids := make([]string, len(hs))
	for i, h := range hs {
		tids[i] = h.tid
		if h.chain == 0 || h.chain != hs[0].chain || h.hop != i+1 || h.camp != want[i] || h.outcome != wantOut[i] {
			w.t.Errorf("participant %d session %d: %+v, want hop %d of chain %d on campaign %d, outcome %s",
				p, i, h, i+1, hs[0].chain, want[i], wantOut[i])
		}
	}
	last := hs[len(hs)-1]
	n := strconv.Itoa(len(hs))
	if final.Get("tid") != last.tid || final.Get("status") != last.outcome || final.Get("attempts") != n {
		w.t.Errorf("participant %d: partner redirect %v, want tid %s status %s attempts %s", p, final, last.tid, last.outcome, n)
	}
	if rs := w.redirectsOf(tids...); len(rs) != 1 {
		w.t.Errorf("participant %d: %d partner redirects for the chain, want 1: %v", p, len(rs), rs)
	}
	// A postback a callback stored leased to a process killed before sending it waits out the
	// lease (the worker's default, 30 s) before another process claims it.
	waitFor(w.t, "the chain's postback", 45*time.Second, func() bool { return len(w.postbacksOf(tids...)) >= 1 })
	time.Sleep(200 * time.Millisecond) // a second postback, were there one, would be due too
	pbs := w.postbacksOf(tids...)
	if len(pbs) != 1 {
		w.t.Fatalf("participant %d: %d postbacks for the chain, want 1: %v", p, len(pbs), pbs)
	}
	pb := pbs[0]
	if pb.Get("tid") != last.tid || pb.Get("status") != last.outcome || pb.Get("attempts") != n ||
		pb.Get("reward") != final.Get("reward") {
		w.t.Errorf("participant %d: postback %v, want tid %s status %s attempts %s reward %s", p, pb, last.tid, last.outcome, n, final.Get("reward"))
	}
	if w.partner.badSech.Load() != 0 {
		w.t.Errorf("%d partner URLs with a bad sech", w.partner.badSech.Load())
	}
}

// rerouteMetrics reads the switchboard_reroute_* samples of base's /metrics.
func rerouteMetrics(t *testing.T, w *world, base string) map[string]float64 {
	t.Helper()
	_, body := w.get(w.client, base+"/metrics")
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, "switchboard_reroute_") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[k] += f
	}
	return out
}

// threeCampaigns creates campaigns ranked A > B > C by bid (same incidence and length).
func (w *world) threeCampaigns(base string) (a, b, c int64) {
	a, _ = w.campaign(base, campaignOpts{quota: 100, extra: map[string]any{"cpi": "5.00"}})
	b, _ = w.campaign(base, campaignOpts{quota: 100, extra: map[string]any{"cpi": "4.00"}})
	c, _ = w.campaign(base, campaignOpts{quota: 100, extra: map[string]any{"cpi": "3.00"}})
	return a, b, c
}

// TestRerouteRescue: DQ at A, DQ at B, complete at C (the ranking's order) is one chain of
// three sessions; the partner is paid once, for C's complete, with attempts=3, by one
// redirect and one postback; a replayed intermediate callback goes to the same next hop
// and admits nothing; the metrics count the chain.
func TestRerouteRescue(t *testing.T) {
	w := newWorld(t, "")
	w.setReroute(5)
	s := w.startInProcess()
	w.runWorker()
	a, b, c := w.threeCampaigns(s.URL)
	w.outcomesByCampaign(map[int64]string{a: "disqualified", b: "disqualified", c: "complete"})
	ps := w.participants(1)
	w.settle()

	final, err := w.walk(w.entryURL(s.URL, ps[0], a))
	if err != nil {
		t.Fatal(err)
	}
	w.checkChain(ps[0], final, []int64{a, b, c}, []string{"disqualified", "disqualified", "complete"})
	if final.Get("reward") != "150" { // C's complete: 3.00 × 0.5 × 100 coins
		t.Errorf("reward %s, want 150 (the complete of the last session)", final.Get("reward"))
	}

	// A replay of hop 1's callback: the same 302 to hop 2's supplier link, no new session.
	hs := w.hops(ps[0])
	before := w.count(`SELECT count(*) FROM sessions`)
	resp, _ := w.get(w.noFollow, w.callbackURL("disqualified", hs[0].tid, w.buyer.APISecret))
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("tid") != hs[1].tid || !strings.HasPrefix(loc.String(), w.survey.srv.URL) {
		t.Errorf("replayed hop-1 callback: %d %s, want 302 to hop 2 (tid %s)", resp.StatusCode, loc, hs[1].tid)
	}
	// A replay of the last: the same partner redirect.
	resp, _ = w.get(w.noFollow, w.callbackURL("complete", hs[2].tid, w.buyer.APISecret))
	loc, _ = url.Parse(resp.Header.Get("Location"))
	if q := loc.Query(); resp.StatusCode != http.StatusFound || q.Get("tid") != hs[2].tid || q.Get("attempts") != "3" {
		t.Errorf("replayed final callback: %d %s, want the partner redirect with attempts=3", resp.StatusCode, loc)
	}
	// Another outcome for an intermediate hop: 409.
	resp, _ = w.get(w.noFollow, w.callbackURL("complete", hs[1].tid, w.buyer.APISecret))
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("a different outcome for hop 2: %d, want 409", resp.StatusCode)
	}
	if after := w.count(`SELECT count(*) FROM sessions`); after != before {
		t.Errorf("replays admitted %d sessions", after-before)
	}
	time.Sleep(300 * time.Millisecond)
	if pbs := w.postbacksOf(hs[0].tid, hs[1].tid, hs[2].tid); len(pbs) != 1 {
		t.Errorf("after replays: %d postbacks, want 1", len(pbs))
	}

	m := rerouteMetrics(t, w, s.URL)
	pub := `publisher="` + strconv.FormatInt(w.pub.ID, 10) + `"`
	for k, want := range map[string]float64{
		"switchboard_reroute_chains_started_total{" + pub + "}":                  1,
		"switchboard_reroute_hops_total{" + pub + "}":                            2,
		"switchboard_reroute_chains_ended_total{" + pub + `,reason="complete"}`:  1,
		"switchboard_reroute_rescued_completes_total{" + pub + "}":               1,
		"switchboard_reroute_chains_ended_total{" + pub + `,reason="no_survey"}`: 0,
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v (all: %v)", k, m[k], want, m)
		}
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// TestRerouteEnds: a chain ends with its last session's result and attempts = its sessions
// when no other survey is eligible, and when the attempts are used up; a complete at the
// offer's own survey is a chain of one.
func TestRerouteEnds(t *testing.T) {
	t.Run("no other survey", func(t *testing.T) {
		w := newWorld(t, "")
		w.setReroute(3)
		s := w.startInProcess()
		w.runWorker()
		a, _ := w.campaign(s.URL, campaignOpts{quota: 100})
		w.outcomesByCampaign(map[int64]string{a: "disqualified"})
		ps := w.participants(1)
		w.settle()
		final, err := w.walk(w.entryURL(s.URL, ps[0], a))
		if err != nil {
			t.Fatal(err)
		}
		w.checkChain(ps[0], final, []int64{a}, []string{"disqualified"})
		if end := w.count(`SELECT count(*) FROM reroute_chains WHERE end_reason = 'no_survey'`); end != 1 {
			t.Errorf("chains ended no_survey: %d, want 1", end)
		}
	})
	t.Run("attempts exhausted", func(t *testing.T) {
		w := newWorld(t, "")
		w.setReroute(1)
		s := w.startInProcess()
		w.runWorker()
		a, b, c := w.threeCampaigns(s.URL)
		w.outcomesByCampaign(map[int64]string{a: "over_quota", b: "disqualified", c: "complete"})
		ps := w.participants(1)
		w.settle()
		final, err := w.walk(w.entryURL(s.URL, ps[0], a))
		if err != nil {
			t.Fatal(err)
		}
		w.checkChain(ps[0], final, []int64{a, b}, []string{"over_quota", "disqualified"})
		if end := w.count(`SELECT count(*) FROM reroute_chains WHERE end_reason = 'exhausted'`); end != 1 {
			t.Errorf("chains ended exhausted: %d, want 1", end)
		}
	})
	t.Run("complete first", func(t *testing.T) {
		w := newWorld(t, "")
		w.setReroute(2)
		s := w.startInProcess()
		w.runWorker()
		a, b, _ := w.threeCampaigns(s.URL)
		w.outcomesByCampaign(map[int64]string{a: "quality_term", b: "complete"})
		ps := w.participants(1)
		w.settle()
		final, err := w.walk(w.entryURL(s.URL, ps[0], a))
		if err != nil {
			t.Fatal(err)
		}
		// quality_term ends the chain: no re-routing to B.
		w.checkChain(ps[0], final, []int64{a}, []string{"quality_term"})
	})
	t.Run("older than 60 minutes", func(t *testing.T) {
		w := newWorld(t, "")
		w.setReroute(3)
		s := w.startInProcess()
		w.runWorker()
		a, b, _ := w.threeCampaigns(s.URL)
		w.outcomesByCampaign(map[int64]string{b: "complete"}) // a: the test calls back itself
		ps := w.participants(1)
		w.settle()
		resp, _ := w.get(w.noFollow, w.entryURL(s.URL, ps[0], a))
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("entry: %d", resp.StatusCode)
		}
		hs := w.hops(ps[0])
		if _, err := w.db.Pool.Exec(context.Background(), `UPDATE reroute_chains SET started_at = now() - interval '61 minutes' WHERE id = $1`, hs[0].chain); err != nil {
			t.Fatal(err)
		}
		final, err := w.walk(w.callbackURL("disqualified", hs[0].tid, w.buyer.APISecret))
		if err != nil {
			t.Fatal(err)
		}
		w.checkChain(ps[0], final, []int64{a}, []string{"disqualified"})
		if end := w.count(`SELECT count(*) FROM reroute_chains WHERE end_reason = 'expired'`); end != 1 {
			t.Errorf("chains ended expired: %d, want 1", end)
		}
	})
}

// TestRerouteRefusedEntry: an offer for A whose quota filled between the offer and the
// entry is re-routed to B (a new chain, the refusal using one attempt); B's complete is the
// chain's result, attempts=1. Without attempts the same refusal goes back over_quota.
func TestRerouteRefusedEntry(t *testing.T) {
	w := newWorld(t, "")
	w.setReroute(1)
	s := w.startInProcess()
	w.runWorker()
	a, _ := w.campaign(s.URL, campaignOpts{quota: 1, extra: map[string]any{"cpi": "5.00"}})
	b, _ := w.campaign(s.URL, campaignOpts{quota: 100, extra: map[string]any{"cpi": "4.00"}})
	w.outcomesByCampaign(map[int64]string{b: "disqualified"})
	ps := w.participants(2)
	w.settle()
	// Both were offered A; the first entry fills it (in progress counts, §5).
	offer := w.entryURL(s.URL, ps[1], a)
	if resp, _ := w.get(w.noFollow, w.entryURL(s.URL, ps[0], a)); resp.StatusCode != http.StatusFound {
		t.Fatalf("first entry: %d", resp.StatusCode)
	}
	final, err := w.walk(offer)
	if err != nil {
		t.Fatal(err)
	}
	// B disqualifies; the refusal used the one attempt: the chain ends there.
	w.checkChain(ps[1], final, []int64{b}, []string{"disqualified"})
	if tried := w.count(`SELECT cardinality(tried) FROM reroute_chains c JOIN sessions s ON s.chain_id = c.id
		WHERE s.participant_id = $1`, ps[1]); tried != 2 {
		t.Errorf("chain tried %d campaigns, want 2 (A refused, B)", tried)
	}
}

// TestRerouteOff: with reroute_attempts 0 a disqualify goes straight back to the partner as
// in §7, without attempts, and no chain is stored.
func TestRerouteOff(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	w.runWorker()
	a, _, _ := w.threeCampaigns(s.URL)
	w.outcomesByCampaign(map[int64]string{a: "disqualified"})
	ps := w.participants(1)
	w.settle()
	final, err := w.walk(w.entryURL(s.URL, ps[0], a))
	if err != nil {
		t.Fatal(err)
	}
	hs := w.hops(ps[0])
	if len(hs) != 1 || hs[0].chain != 0 || final.Get("tid") != hs[0].tid || final.Has("attempts") {
		t.Errorf("sessions %+v, partner redirect %v: want one session, no chain, no attempts", hs, final)
	}
	if n := w.count(`SELECT count(*) FROM reroute_chains`); n != 0 {
		t.Errorf("%d chains stored with re-routing off", n)
	}
	waitFor(t, "postback", 20*time.Second, func() bool { return len(w.postbacksOf(hs[0].tid)) == 1 })
	if pb := w.postbacksOf(hs[0].tid)[0]; pb.Has("attempts") {
		t.Errorf("postback %v carries attempts with re-routing off", pb)
	}
}

// TestRerouteTwoProcessesKill9: chains through two serve processes behind one public URL
// (hops alternate between them), with one process killed (kill -9) and restarted in the
// middle: every chain is whole (hops 1..n, every session decided), and its partner gets
// exactly one final postback, of its last session, with attempts = n.
func TestRerouteTwoProcessesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve processes")
	}
	w := newWorld(t, "")
	w.setReroute(5)
	w.runWorker()
	lb := newBalancer(t)
	w.publicURL = lb.srv.URL
	p1, p2 := w.serve(""), w.serve("")
	lb.set(p1.addr, p2.addr)
	a, b, c := w.threeCampaigns("http://" + p1.addr)
	w.outcomesByCampaign(map[int64]string{a: "disqualified", b: "over_quota", c: "complete"})
	const people = 60
	ps := w.participants(people)
	w.settle()

	var mu sync.Mutex
	finals := map[int64]url.Values{}
	var failures []error
	var wg sync.WaitGroup
	var third sync.WaitGroup
	third.Add(people / 3)
	jobs := make(chan int64)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				q, err := w.walk(w.entryURL(w.publicURL, p, a))
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else {
					finals[p] = q
				}
				if len(finals)+len(failures) <= people/3 {
					third.Done()
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
	third.Wait()
	p2.kill()
	lb.set(p1.addr)
	time.Sleep(300 * time.Millisecond)
	p2 = w.serve(p2.addr)
	lb.set(p1.addr, p2.addr)
	wg.Wait()
	for _, err := range failures {
		t.Error(err)
	}
	// Every supplier link a survey received is a stored, decided session.
	w.survey.mu.Lock()
	seen := make([]string, 0, len(w.survey.seen))
	for tid := range w.survey.seen {
		seen = append(seen, tid)
	}
	w.survey.mu.Unlock()
	if n := w.count(`SELECT count(*) FROM sessions WHERE tid = ANY($1) AND outcome IS NOT NULL`, seen); n != int64(len(seen)) {
		t.Errorf("%d of %d sessions the survey saw are stored and decided", n, len(seen))
	}
	// The ranking learns conversion from outcomes, so later chains may skip B (over_quota
	// every time) for C: A, then B or not, then C's complete. A participant whose entry was
	// admitted by the killed server but never answered entered again (a new chain; the
	// abandoned session, never seen by the survey, gets no callback and no postback).
	abandoned := 0
	for _, p := range ps {
		q, ok := finals[p]
		if !ok {
			continue
		}
		if n := w.count(`SELECT count(*) FROM sessions WHERE chain_id = (SELECT chain_id FROM sessions WHERE tid = $1)`, q.Get("tid")); n == 2 {
			w.checkFinalChain(p, q, []int64{a, c}, []string{"disqualified", "complete"})
		} else {
			w.checkFinalChain(p, q, []int64{a, b, c}, []string{"disqualified", "over_quota", "complete"})
		}
		for _, h := range w.hops(p) {
			if h.outcome == "" {
				abandoned++
				if h.hop != 1 {
					t.Errorf("participant %d: hop %d undecided (%+v): a lost hop", p, h.hop, h)
				}
			}
		}
	}
	waitFor(t, "every postback delivered", 60*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM postback_outbox WHERE delivered_at IS NULL`) == 0
	})
	if n := w.count(`SELECT count(*) FROM postback_outbox`); n != people {
		t.Errorf("%d postbacks stored for %d chains, want one each", n, people)
	}
	t.Logf("entries answered by the killed server too late (retried as new entries): %d", abandoned)
	w.partner.mu.Lock()
	dupes := w.partner.dupes
	w.partner.mu.Unlock()
	t.Logf("%d chains (A, B or not, C) through 2 processes, one killed mid-run; postback duplicates (at least once): %d",
		len(finals), dupes)
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// TestRerouteReplays: concurrent copies of an intermediate hop's callback all answer the same
// 302 to the same next session, and only one is admitted; the offer clicked again after its
// chain ended, refused by reentry_interval, is not re-routed (it did not fill meanwhile).
func TestRerouteReplays(t *testing.T) {
	w := newWorld(t, "")
	w.setReroute(2)
	s := w.startInProcess()
	w.runWorker()
	a, _ := w.campaign(s.URL, campaignOpts{quota: 100, extra: map[string]any{"cpi": "5.00", "reentry_interval": 60}})
	b, _ := w.campaign(s.URL, campaignOpts{quota: 100, extra: map[string]any{"cpi": "4.00"}})
	w.survey.outcome = func(string) string { return "" } // the test calls back itself
	ps := w.participants(1)
	w.settle()
	offer := w.entryURL(s.URL, ps[0], a)
	if resp, _ := w.get(w.noFollow, offer); resp.StatusCode != http.StatusFound {
		t.Fatalf("entry: %d", resp.StatusCode)
	}
	hop1 := w.hops(ps[0])[0]
	const copies = 8
	locs := make([]string, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := w.noFollow.Get(w.callbackURL("disqualified", hop1.tid, w.buyer.APISecret))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound {
				t.Errorf("copy %d: %d", i, resp.StatusCode)
			}
			locs[i] = resp.Header.Get("Location")
		}()
	}
	wg.Wait()
	hs := w.hops(ps[0])
	if len(hs) != 2 || hs[1].camp != b || hs[1].hop != 2 {
		t.Fatalf("sessions after %d concurrent copies: %+v, want hop 1 on A and one hop 2 on B", copies, hs)
	}
	for i, loc := range locs {
		if u, _ := url.Parse(loc); loc != locs[0] || u.Query().Get("tid") != hs[1].tid {
			t.Errorf("copy %d answered %s, want %s (hop 2, tid %s)", i, loc, locs[0], hs[1].tid)
		}
	}
	final, err := w.walk(w.callbackURL("complete", hs[1].tid, w.buyer.APISecret))
	if err != nil {
		t.Fatal(err)
	}
	w.checkChain(ps[0], final, []int64{a, b}, []string{"disqualified", "complete"})

	// The same offer again: reentry_interval refuses A; back over_quota, no tid, no chain.
	again, err := w.walk(offer)
	if err != nil {
		t.Fatal(err)
	}
	if again.Get("status") != "over_quota" || again.Has("tid") || again.Has("attempts") || len(w.hops(ps[0])) != 2 {
		t.Errorf("offer clicked again: partner redirect %v, sessions %d; want over_quota without tid and no new session", again, len(w.hops(ps[0])))
	}
	checkLedger(t, w.db) // the ledger agrees with the outcomes and postbacks (docs/payouts.md, "Ledger")
}

// TestRerouteQuotaFilledBeforeHop: B, the best next survey, fills in the database (another
// server's entries, not yet mirrored here) between the chain's start and its hop: the
// arbiter refuses B inside the hop's transaction and the chain goes on to C.
func TestRerouteQuotaFilledBeforeHop(t *testing.T) {
	w := newWorld(t, "")
	w.setReroute(3)
	s := w.startInProcess()
	w.runWorker()
	a, b, c := w.threeCampaigns(s.URL)
	w.outcomesByCampaign(map[int64]string{a: "disqualified", c: "complete"}) // b: must not be entered
	ps := w.participants(1)
	w.settle()
	if resp, _ := w.get(w.noFollow, w.entryURL(s.URL, ps[0], a)); resp.StatusCode != http.StatusFound {
		t.Fatalf("entry: %d", resp.StatusCode)
	}
	// B fills behind the engine's back (no notification): only the database knows.
	if _, err := w.db.Pool.Exec(context.Background(), `UPDATE campaign_quotas SET completes = num_respondents WHERE campaign_id = $1`, b); err != nil {
		t.Fatal(err)
	}
	hop1 := w.hops(ps[0])[0]
	final, err := w.walk(w.callbackURL("disqualified", hop1.tid, w.buyer.APISecret))
	if err != nil {
		t.Fatal(err)
	}
	w.checkChain(ps[0], final, []int64{a, c}, []string{"disqualified", "complete"})
	refused := entryVerdicts(t, w, s.URL)[`by="database",reason="quota",verdict="refused"`]
	t.Logf("B refused by the arbiter inside the hop's transaction: %v (0: the mirror caught up first)", refused)
}
