package router_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// requireHAProxy returns the haproxy binary, or skips t without one, except where HAProxy
// is required: SWITCHBOARD_REQUIRE_HAPROXY=1 (.ci/run sets it after installing the package)
// or CI=true make a missing binary a failure, so that CI cannot skip this test silently.
func requireHAProxy(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("haproxy")
	if err == nil {
		return path
	}
	if os.Getenv("SWITCHBOARD_REQUIRE_HAPROXY") == "1" || os.Getenv("CI") == "true" {
		t.Fatalf("haproxy is not installed (apt-get install haproxy; .ci/run installs it): %v", err)
	}
	t.Skip("haproxy is not installed (apt-get install haproxy); CI requires it")
	return ""
}

// haproxy is a running HAProxy on docs/deploy/haproxy.cfg.
type haproxy struct {
	cmd   *exec.Cmd
	stats string // its stats page, CSV at stats + "/;csv"
	log   *bytes.Buffer
}

// startHAProxy runs docs/deploy/haproxy.cfg, unchanged, with its addresses from the
// environment: bind on bind, the three servers at backends, the stats page on a free port,
// the runtime API's socket in a temporary directory.
func startHAProxy(t *testing.T, bin, bind string, backends [3]string) *haproxy {
	t.Helper()
	cfg, err := filepath.Abs("../docs/deploy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	stats := freeAddr(t)
	check := exec.Command(bin, "-c", "-q", "-f", cfg)
	env := append(os.Environ(), "SWITCHBOARD_BIND="+bind, "SWITCHBOARD_1="+backends[0], "SWITCHBOARD_2="+backends[1],
		"SWITCHBOARD_3="+backends[2], "HAPROXY_STATS="+stats, "HAPROXY_SOCKET="+filepath.Join(t.TempDir(), "admin.sock"))
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c docs/deploy/haproxy.cfg: %v\n%s", err, out)
	}
	h := &haproxy{stats: "http://" + stats, log: &bytes.Buffer{}}
	h.cmd = exec.Command(bin, "-db", "-f", cfg) // -db: in the foreground
	h.cmd.Env = env
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		_ = h.cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", h.log)
		}
	})
	return h
}

// states reads the backend servers' states (UP, DOWN, ...) from the stats CSV.
func (h *haproxy) states() map[string]string {
	resp, err := http.Get(h.stats + "/;csv")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) > 17 && f[0] == "serve" && f[1] != "BACKEND" {
			out[f[1]] = f[17] // pxname, svname, ..., status
		}
	}
	return out
}

// waitState waits until HAProxy reports server as state ("UP", "DOWN").
func (h *haproxy) waitState(t *testing.T, server, state string, d time.Duration) {
	t.Helper()
	waitFor(t, server+" "+state+" in haproxy", d, func() bool { return strings.HasPrefix(h.states()[server], state) })
}

// TestHAProxyThreeProcessesKill9 starts the topology of docs/deploy.md: one PostgreSQL,
// three real serve processes, and HAProxy on docs/deploy/haproxy.cfg in front. Respondents
// go through the balancer only: offers, the entry link of an offer, the survey, the buyer's
// callback and back to the partner. A third of the way in, one process is killed with
// SIGKILL; it is restarted two thirds of the way in and rejoins once /readyz answers. The
// only failures allowed are respondents in flight at the kill, and only as HAProxy's
// retry-able 502/503/504 or a cut connection; every other respondent gets through. The
// quota's counts are exact afterwards: completes in campaign_quotas equal complete sessions
// and the completes the partner was told, and the quota is never over-filled.
func TestHAProxyThreeProcessesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three serve processes and haproxy")
	}
	bin := requireHAProxy(t)
	began := time.Now()
	ctx := context.Background()
	w := newWorld(t, "")
	token, err := w.db.Accounts.RotatePublisherToken(ctx, w.pub.ID) // the partner's token, for offers
	if err != nil {
		t.Fatal(err)
	}
	lb := freeAddr(t)
	w.publicURL = "http://" + lb
	addrs := [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
	h := startHAProxy(t, bin, lb, addrs)
	binary(t)
	var procs [3]*proc
	var started sync.WaitGroup
	for i := range procs { // at once: each waits for its /readyz (a failure fails t and ends its goroutine)
		started.Add(1)
		go func() { defer started.Done(); procs[i] = w.serve(addrs[i]) }()
	}
	started.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range []string{"serve1", "serve2", "serve3"} {
		h.waitState(t, s, "UP", 10*time.Second)
	}

	t.Logf("database, haproxy and 3 serve processes up in %s", time.Since(began).Round(time.Millisecond))
	const quota, people, flows = 200, 300, 24
	camp, quotaID := w.campaign(w.publicURL, campaignOpts{quota: quota})
	users := make([]string, people)
	for i := range users {
		users[i] = fmt.Sprintf("lb-user-%d-%d", time.Now().UnixNano(), i)
		if _, err := w.db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: w.pub.ID, User: users[i], CountryID: 1,
			Profile: []persistence.ProfileAnswer{{QuestionID: 42, Codes: []int32{int32(20 + i%40)}}, {QuestionID: 43, Codes: []int32{int32(1 + i%2)}},
				{QuestionID: 45, Texts: []string{"94105"}}}}, "test", func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	w.settle()
	trafficAt := time.Now()

	// Each respondent is one flow; a flow records when it ran, so that a failure can be
	// matched with the kill.
	results := make([]lbResult, people)
	var progressed atomic.Int64
	jobs := make(chan int)
	var done sync.WaitGroup
	for range flows {
		done.Add(1)
		go func() {
			defer done.Done()
			for i := range jobs {
				r := &results[i]
				r.start = time.Now()
				respondThroughBalancer(w, token, users[i], camp, r)
				r.end = time.Now()
				progressed.Add(1)
			}
		}()
	}
	var killAt, restartAt time.Time
	go func() {
		for i := range users {
			jobs <- i
		}
		close(jobs)
	}()
	waitFor(t, "a third of the respondents", 60*time.Second, func() bool { return progressed.Load() >= people/3 })
	killAt = time.Now()
	procs[1].kill() // kill -9 mid-traffic
	killed := time.Since(killAt)
	h.waitState(t, "serve2", "DOWN", 10*time.Second)
	waitFor(t, "two thirds of the respondents", 60*time.Second, func() bool { return progressed.Load() >= 2*people/3 })
	restartAt = time.Now()
	procs[1] = w.serve(addrs[1]) // restarted on its address: HAProxy's checks put it back
	h.waitState(t, "serve2", "UP", 10*time.Second)
	rejoined := time.Now()
	done.Wait()
	t.Logf("traffic took %s", time.Since(trafficAt).Round(time.Millisecond))

	var ok, noOffer, inFlight, excused int
	statuses := map[string]int{}
	for _, r := range results {
		atKill := r.start.Before(killAt.Add(killed)) && r.end.After(killAt)
		if atKill {
			inFlight++
		}
		switch {
		case r.err == "" && !r.offered:
			noOffer++
		case r.err == "":
			ok++
			statuses[r.status]++
		case atKill && r.retryable:
			excused++
		default:
			t.Errorf("respondent failed outside the kill (ran %s to %s, kill at %s): %s", r.start.Format("15:04:05.000"),
				r.end.Format("15:04:05.000"), killAt.Format("15:04:05.000"), r.err)
		}
	}
	var completes, inProgress, entries int64
	if err := w.db.Pool.QueryRow(ctx, `SELECT completes, in_progress, entries FROM campaign_quotas WHERE id = $1`, quotaID).
		Scan(&completes, &inProgress, &entries); err != nil {
		t.Fatal(err)
	}
	sessions := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1 AND outcome = 'complete'`, camp)
	t.Logf("%d respondents through haproxy and 3 serve processes (serve2 killed at %d%%, back after %s): %d through "+
		"(partner statuses %v), %d without an offer, %d failed in flight at the kill (of %d in flight); quota %d: "+
		"completes %d, complete sessions %d, in_progress %d, entries %d",
		people, 100/3, rejoined.Sub(restartAt).Round(time.Millisecond), ok, statuses, noOffer, excused, inFlight, quota,
		completes, sessions, inProgress, entries)
	if completes != sessions {
		t.Errorf("campaign_quotas.completes %d, complete sessions %d", completes, sessions)
	}
	// Every complete the partner was told is counted; a respondent cut off at the kill may
	// have completed without hearing it, and no more of them than were in flight.
	told := int64(statuses["complete"])
	if completes < told || completes > told+int64(excused) {
		t.Errorf("completes %d, completes told to the partner %d (+ %d cut off at the kill)", completes, told, excused)
	}
	if completes > quota || completes+inProgress > quota {
		t.Errorf("quota %d over-filled: completes %d, in_progress %d", quota, completes, inProgress)
	}
	// A session of a respondent cut off mid-survey keeps its place until the sweep; every
	// other place is taken by a complete.
	if completes+inProgress != quota {
		t.Errorf("quota %d not filled exactly: completes %d + in_progress %d", quota, completes, inProgress)
	}
	if inProgress > int64(excused) {
		t.Errorf("in_progress %d, more than the %d respondents cut off at the kill", inProgress, excused)
		rows, err := w.db.Pool.Query(ctx, `SELECT s.participant_id, s.tid, s.entered_at, coalesce(s.outcome, 'in progress'),
			(SELECT count(*) FROM sessions o WHERE o.participant_id = s.participant_id AND o.campaign_id = s.campaign_id)
			FROM sessions s WHERE s.campaign_id = $1 AND s.outcome IS NULL`, camp)
		if err == nil {
			for rows.Next() {
				var pid, n int64
				var tid, outcome string
				var at time.Time
				if rows.Scan(&pid, &tid, &at, &outcome, &n) == nil {
					t.Logf("session %s of participant %d entered %s (kill %s): %s; sessions of the participant here: %d",
						tid, pid, at.Format("15:04:05.000"), killAt.Format("15:04:05.000"), outcome, n)
				}
			}
			rows.Close()
		}
	}
	if n := w.survey.badHash.Load(); n != 0 {
		t.Errorf("%d supplier links with a bad security_hash", n)
	}
	// The restarted process took traffic again once HAProxy saw it ready.
	if v := entryVerdicts(t, w, "http://"+addrs[1]); len(v) == 0 {
		t.Error("the restarted serve2 answers no switchboard_entries_total")
	}
	// Entries a browser resent after the kill (an admission committed, its answer lost) were
	// answered with their session (docs/rules.md §6); how many is up to the timing.
	var resumed float64
	for _, a := range addrs {
		resumed += entryVerdicts(t, w, "http://"+a)[`verdict="resumed"`]
	}
	t.Logf("entries resumed by the surviving and restarted processes: %v", resumed)
}

// lbResult is one respondent's run through the balancer.
type lbResult struct {
	start, end time.Time
	status     string // the partner's status at /back, "" when no offer or a failure
	offered    bool
	err        string // the failure: transport error, or final status and where
	retryable  bool   // HAProxy's 502/503/504 or a cut connection
}

// respondThroughBalancer runs one participant through the public URL: offers, the entry URL
// of the campaign's offer, the survey and its callback, back to the partner.
func respondThroughBalancer(w *world, token, user string, camp int64, r *lbResult) {
	fail := func(status int, what string) {
		r.retryable = status == 0 || status == http.StatusBadGateway || status == http.StatusServiceUnavailable ||
			status == http.StatusGatewayTimeout
		r.err = what
	}
	req, _ := http.NewRequest("GET", w.publicURL+"/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=2", nil)
	req.Header.Set("X-Api-Token", token)
	req.Header.Set("X-User-Identifier", user)
	resp, err := w.client.Do(req)
	if err != nil {
		fail(0, "offers: "+err.Error())
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		fail(resp.StatusCode, fmt.Sprintf("offers: %d %v %.200s", resp.StatusCode, err, body))
		return
	}
	var offers struct {
		Surveys []struct {
			Identifier string `json:"identifier"`
			EntryURL   string `json:"offer_entry_url"`
		} `json:"surveys"`
	}
	if err := json.Unmarshal(body, &offers); err != nil {
		fail(-1, "offers: "+err.Error())
		return
	}
	entry := ""
	for _, s := range offers.Surveys {
		if s.Identifier == fmt.Sprint(camp) {
			entry = s.EntryURL
		}
	}
	if entry == "" { // the quota is full: the campaign is no longer offered
		return
	}
	r.offered = true
	if !strings.HasPrefix(entry, w.publicURL+"/") {
		fail(-1, "offer entry URL not on the public URL: "+entry)
		return
	}
	resp, err = w.client.Get(entry) // follows: entry → survey → callback → partner
	if err != nil {
		fail(0, "entry: "+err.Error())
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Request.URL.Path != "/back" {
		fail(resp.StatusCode, fmt.Sprintf("entry ended at %s with %d", resp.Request.URL.Path, resp.StatusCode))
		return
	}
	r.status = resp.Request.URL.Query().Get("status")
}

// TestHAProxyLimitsFailedAuthenticationOnly runs docs/deploy/haproxy.cfg in front of a
// process (its three servers on one address) and checks its per-client limit, three clients
// at addresses of their own: a buyer whose 60 authenticated requests name a campaign that
// does not exist (404), and a partner whose backend has 60 impanels rejected in 10 s (422),
// keep every route, the offers above all; a client failing authentication 60 times in 10 s
// (401) is answered 429 on every route, except the offers of a partner token, while another
// address is served as before.
func TestHAProxyLimitsFailedAuthenticationOnly(t *testing.T) {
	bin := requireHAProxy(t)
	ctx := context.Background()
	w := newWorld(t, "")
	s := w.startInProcess()
	token, err := w.db.Accounts.RotatePublisherToken(ctx, w.pub.ID)
	if err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprintf("haproxy-user-%d", time.Now().UnixNano())
	if _, err := w.db.Participants.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: w.pub.ID, User: user, CountryID: 1,
		Profile: []persistence.ProfileAnswer{{QuestionID: 42, Codes: []int32{30}}, {QuestionID: 43, Codes: []int32{1}},
			{QuestionID: 45, Texts: []string{"94105"}}}}, "test", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	backend := strings.TrimPrefix(s.URL, "http://")
	lb := freeAddr(t)
	h := startHAProxy(t, bin, lb, [3]string{backend, backend, backend})
	for _, name := range []string{"serve1", "serve2", "serve3"} {
		h.waitState(t, name, "UP", 10*time.Second)
	}
	base := "http://" + lb

	// send makes one request from the loopback address ip and returns its status.
	send := func(ip, method, path string, body []byte, header map[string]string, basic ...string) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if len(basic) == 2 {
			req.SetBasicAuth(basic[0], basic[1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s from %s: %v", method, path, ip, err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		return resp.StatusCode
	}
	buyer := func(ip string) int {
		return send(ip, "GET", "/api/v1/campaigns", nil, nil, w.buyer.Email, w.token)
	}
	offers := func(ip string) int {
		return send(ip, "GET", "/supply_api/v4/campaigns?user_ip=73.15.20.9&device_type=2", nil,
			map[string]string{"X-Api-Token": token, "X-User-Identifier": user})
	}
	const tries = 60 // past the 50 in 10 s the configuration allows

	t.Run("a buyer's 404s", func(t *testing.T) {
		const ip = "127.0.0.21"
		for i := range tries {
			if st := send(ip, "GET", "/api/v1/campaigns/999999999", nil, nil, w.buyer.Email, w.token); st != 404 {
				t.Fatalf("request %d for a campaign that does not exist: %d, want 404", i+1, st)
			}
		}
		if st := buyer(ip); st != 200 {
			t.Errorf("a valid buyer call after %d 404s: %d, want 200", tries, st)
		}
		if st := offers(ip); st != 200 {
			t.Errorf("offers from the same address after %d 404s: %d, want 200", tries, st)
		}
	})

	t.Run("a partner's rejected impanels", func(t *testing.T) {
		const ip = "127.0.0.22"
		for i := range tries {
			ts := time.Now().Unix()
			m := hmac.New(sha256.New, []byte(w.pub.APISecret))
			fmt.Fprintf(m, "%s:%d", user, ts)
			body := fmt.Sprintf(`{"ts":%d,"sech":%q,"country_id":999999,"profile":[]}`, ts, hex.EncodeToString(m.Sum(nil)))
			st := send(ip, "POST", "/supply_api/v4/players/impanel", []byte(body), map[string]string{"X-Api-Token": token,
				"X-User-Identifier": user, "Content-Type": "application/json"})
			if st != 422 {
				t.Fatalf("rejected impanel %d: %d, want 422", i+1, st)
			}
		}
		if st := offers(ip); st != 200 {
			t.Errorf("the partner's offers after %d rejected impanels: %d, want 200", tries, st)
		}
	})

	t.Run("failed authentications", func(t *testing.T) {
		const ip, other = "127.0.0.23", "127.0.0.24"
		for i := range tries {
			st := send(ip, "GET", "/api/v1/campaigns", nil, nil, w.buyer.Email, fmt.Sprintf("wrong-%d", i))
			if st != 401 && !(i >= 50 && st == 429) {
				t.Fatalf("failed authentication %d: %d, want 401 (429 past 50)", i+1, st)
			}
		}
		if st := buyer(ip); st != 429 {
			t.Errorf("a buyer call from the failing address: %d, want 429", st)
		}
		if st := send(ip, "GET", "/supply_api/v4/countries", nil, map[string]string{"X-Api-Token": token}); st != 429 {
			t.Errorf("another supply route from the failing address: %d, want 429", st)
		}
		if st := offers(ip); st != 200 {
			t.Errorf("a partner's offers from the failing address: %d, want 200", st)
		}
		if st := buyer(other); st != 200 {
			t.Errorf("a buyer call from another address: %d, want 200", st)
		}
	})
}
