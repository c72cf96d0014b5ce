package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/router/payout"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is one deployment under test: a database, one or more switchboard servers behind a
// public URL, a buyer with a survey server that calls back, and a partner that receives
// redirects and postbacks.
type world struct {
	t         testing.TB
	db        *persistence.DB // the test's own pool
	dbURL     string
	publicURL string // what the service hands out and hashes: the balancer, or the one server
	key       *entrytoken.Key
	buyer     persistence.Buyer
	token     string
	pub       persistence.Publisher
	survey    *survey
	partner   *partner
	client    *http.Client // follows redirects: a respondent's browser
	noFollow  *http.Client
}

// survey is the buyer's survey: it checks security_hash and sends the respondent back to the
// callback its outcome function chooses.
type survey struct {
	srv     *httptest.Server
	w       *world
	outcome func(tid string) string // "" answers 200 without a callback
	mu      sync.Mutex
	seen    map[string]url.Values // tid → query of the supplier link
	badHash atomic.Int64
}

// partner records the redirects and postbacks of the publisher, deduping postbacks by
// (tid, status) like an idempotent receiver.
type partner struct {
	srv       *httptest.Server
	secret    string
	mu        sync.Mutex
	redirects []url.Values
	postbacks map[string]url.Values // tid|status → query (the latest)
	events    map[string]bool       // event_ids received
	byTID     []url.Values          // every distinct event's postback, in arrival order
	dupes     int
	badSech   atomic.Int64
}

func newWorld(t testing.TB, dbURL string) *world {
	t.Helper()
	ctx := context.Background()
	if dbURL == "" {
		dbURL = pgtest.URL(t)
	}
	db, err := persistence.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: db, dbURL: dbURL}
	secret, err := db.Accounts.ServiceKey(ctx, persistence.EntryKeyName)
	if err != nil {
		t.Fatal(err)
	}
	w.key = entrytoken.NewKey(secret)
	w.buyer, w.token, err = db.Accounts.CreateBuyer(ctx, fmt.Sprintf("b%d@example.test", time.Now().UnixNano()), "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	w.partner = &partner{postbacks: map[string]url.Values{}}
	w.partner.srv = httptest.NewServer(http.HandlerFunc(w.partner.serve))
	t.Cleanup(w.partner.srv.Close)
	w.pub, _, err = db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Partner", CurrencyName: "coins", ExchangeRate: 100,
		RevenueShare: 0.5, RedirectURL: w.partner.srv.URL + "/back?app=1", PostbackURL: w.partner.srv.URL + "/pb",
		Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	w.partner.secret = w.pub.APISecret
	w.survey = &survey{w: w, seen: map[string]url.Values{}, outcome: func(string) string { return "complete" }}
	w.survey.srv = httptest.NewServer(http.HandlerFunc(w.survey.serve))
	t.Cleanup(w.survey.srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0}
	w.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	w.noFollow = &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return w
}

// startInProcess runs one app in this process; the public URL is its own.
func (w *world) startInProcess() *apptest.Server { return w.startSweepingEvery(0) }

// startSweepingEvery is startInProcess with the app's sweeper ticking every period (0: its
// default).
func (w *world) startSweepingEvery(period time.Duration) *apptest.Server {
	s := apptest.Start(w.t, apptest.Options{DatabaseURL: w.dbURL, RateLimit: -1,
		Configure: func(c *app.Config) { c.Maintenance.SweepEvery = period }})
	w.publicURL = s.PublicURL
	return s
}

func (s *survey) serve(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tid := q.Get("tid")
	if h := q.Get("security_hash"); h != "" {
		raw := "http://" + r.Host + r.URL.Path + "?" + r.URL.RawQuery
		unsigned := raw[:strings.LastIndex(raw, "&security_hash=")]
		if hmacSHA1(s.w.buyer.APISecret, unsigned) != h {
			s.badHash.Add(1)
		}
	}
	s.mu.Lock()
	s.seen[tid] = q
	s.mu.Unlock()
	outcome := s.outcome(tid)
	if outcome == "" {
		rw.WriteHeader(200)
		return
	}
	http.Redirect(rw, r, s.w.callbackURL(outcome, tid, s.w.buyer.APISecret), http.StatusFound)
}

// callbackURL is the signed callback a buyer sends a respondent to.
func (w *world) callbackURL(outcome, tid, secret string) string {
	u := "/router/customers/" + w.buyer.CustomerID + "/cps/" + outcome + "?tid=" + tid
	return w.publicURL + u + "&tr_sech=" + hmacSHA1(secret, w.publicURL+u)
}

func (p *partner) serve(rw http.ResponseWriter, r *http.Request) {
	if !payout.VerifySech(r.URL.RawQuery, p.secret) {
		p.badSech.Add(1)
	}
	q := r.URL.Query()
	p.mu.Lock()
	switch r.URL.Path {
	case "/back":
		p.redirects = append(p.redirects, q)
	case "/pb":
		// A partner dedupes on event_id: one tid may be told complete, reversed and
		// complete again, each its own ledger event (docs/payouts.md, "Ledger").
		if p.events == nil {
			p.events = map[string]bool{}
		}
		if ev := q.Get("event_id"); p.events[ev] {
			p.dupes++
		} else {
			p.events[ev] = true
			p.byTID = append(p.byTID, q)
		}
		p.postbacks[q.Get("tid")+"|"+q.Get("status")] = q
	}
	p.mu.Unlock()
	rw.WriteHeader(200)
}

// told is every distinct event's postback of tid, in arrival order.
func (p *partner) told(tid string) []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []url.Values
	for _, q := range p.byTID {
		if q.Get("tid") == tid {
			out = append(out, q)
		}
	}
	return out
}

func (p *partner) postback(tid, status string) (url.Values, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q, ok := p.postbacks[tid+"|"+status]
	return q, ok
}

// api calls the buyer interface of base.
func (w *world) api(base, method, path string, body any) (int, []byte) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.SetBasicAuth(w.buyer.Email, w.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.noFollow.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (w *world) mustAPI(base, method, path string, body any, want int) map[string]any {
	w.t.Helper()
	code, out := w.api(base, method, path, body)
	if code != want {
		w.t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, want)
	}
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return m
}

type campaignOpts struct {
	link          string
	quota         int
	clickBalanced bool
	extra         map[string]any
}

// campaign creates an active campaign with one quota (everyone of either gender).
func (w *world) campaign(base string, o campaignOpts) (campaignID, quotaID int64) {
	w.t.Helper()
	if o.link == "" {
		o.link = w.survey.srv.URL + "/s?tid={ID}&rid={RESPONDENT_ID}&security_hash={LINK_HASH}"
	}
	body := map[string]any{"name": "Routing test", "incidence": 50, "length_of_interview": 10,
		"country_language_id": 1, "supplier_link": o.link, "cpi": "2.00", "reentry_interval": 0}
	for k, v := range o.extra {
		body[k] = v
	}
	c := w.mustAPI(base, "POST", "/api/v1/campaigns", body, 201)
	campaignID = int64(c["id"].(float64))
	q := w.mustAPI(base, "POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_quotas", campaignID), map[string]any{
		"num_respondents": o.quota, "is_click_balanced": o.clickBalanced,
		"campaign_qualifications": []any{map[string]any{"question_id": 43, "pre_codes": []int{1, 2}}},
	}, 201)
	quotaID = int64(q["id"].(float64))
	w.mustAPI(base, "PUT", fmt.Sprintf("/api/v1/campaigns/%d", campaignID), map[string]any{"status": 2}, 200)
	return campaignID, quotaID
}

// participants impanels n participants of the partner.
func (w *world) participants(n int) []int64 {
	w.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		p, err := w.db.Participants.ImpanelParticipant(context.Background(), persistence.Impanel{
			PublisherID: w.pub.ID, User: fmt.Sprintf("user-%d-%d", time.Now().UnixNano(), i), CountryID: 1,
			Profile: []persistence.ProfileAnswer{
				{QuestionID: 42, Codes: []int32{int32(20 + i%40)}},
				{QuestionID: 43, Codes: []int32{int32(1 + i%2)}},
				{QuestionID: 45, Texts: []string{"94105"}},
			}}, "test", func() error { return nil })
		if err != nil {
			w.t.Fatal(err)
		}
		ids[i] = p.ID
	}
	return ids
}

// entryURL is the offer_entry_url of participant p for campaign c.
func (w *world) entryURL(base string, p, c int64) string {
	return base + "/supply_api/v4/entry?token=" + w.key.Sign(entrytoken.Claims{Kind: entrytoken.KindOffer,
		PublisherID: w.pub.ID, ParticipantID: p, CampaignID: c, DeviceType: 2,
		Expires: time.Now().Unix() + entrytoken.TTL, Nonce: entrytoken.NewNonce()})
}

// waitEngine waits until an entry into campaign c by participant p would be considered
// (the engine of every server has the campaign): it polls the database-visible status only,
// then gives NOTIFY a moment.
func (w *world) settle() { time.Sleep(300 * time.Millisecond) }

// count runs a scalar query.
func (w *world) count(sql string, args ...any) int64 {
	w.t.Helper()
	var n int64
	if err := w.db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// age lets ago (an interval) pass for campaign's sessions: they entered that much earlier,
// and the id sequence's clock readings (session_clock, which bounds the sweeper's reads)
// were taken that much earlier too, as when the time really passes.
func (w *world) age(campaign int64, ago string) {
	w.t.Helper()
	ctx := context.Background()
	if _, err := w.db.Pool.Exec(ctx, `UPDATE sessions SET entered_at = entered_at - $2::interval WHERE campaign_id = $1`, campaign, ago); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.db.Pool.Exec(ctx, `UPDATE session_clock SET at = at - $1::interval`, ago); err != nil {
		w.t.Fatal(err)
	}
}

// --- real serve processes ---

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/switchboard once per test binary.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-router-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/switchboard/switchboard/cmd/switchboard")
		cmd.Stderr = os.Stderr
		buildErr = cmd.Run()
	})
	if buildErr != nil {
		t.Fatalf("build switchboard: %v", buildErr)
	}
	return binPath
}

// proc is one `switchboard serve` process.
type proc struct {
	addr string
	cmd  *exec.Cmd
	log  *os.File
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve starts a serve process on addr (a free one when empty).
func (w *world) serve(addr string) *proc {
	w.t.Helper()
	if addr == "" {
		addr = freeAddr(w.t)
	}
	logf, err := os.CreateTemp(w.t.TempDir(), "serve-*.log")
	if err != nil {
		w.t.Fatal(err)
	}
	// A generous header timeout: these tests count outcomes, and on a loaded test machine a
	// process can stall longer than the production default (5 s) before reading a request.
	cmd := exec.Command(binary(w.t), "serve", "--addr", addr, "--database-url", w.dbURL,
		"--public-url", w.publicURL, "--rate-limit", "-1", "--header-timeout", "30s")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	p := &proc{addr: addr, cmd: cmd, log: logf}
	w.t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			w.t.Fatalf("serve on %s not ready: %v\n%s", addr, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill sends SIGKILL (kill -9) and waits for the process.
func (p *proc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// balancer is the public URL: it spreads requests over the live backends round-robin and
// tries the next backend when one refuses the connection.
type balancer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	backends []string
	next     atomic.Uint64
}

func newBalancer(t testing.TB) *balancer {
	b := &balancer{}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *balancer) set(backends ...string) {
	b.mu.Lock()
	b.backends = backends
	b.mu.Unlock()
}

var proxyTransport = &http.Transport{MaxIdleConnsPerHost: 256}

func (b *balancer) serve(rw http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	backends := b.backends
	b.mu.Unlock()
	n := b.next.Add(1)
	target := backends[int(n%uint64(len(backends)))]
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: target})
			pr.Out.Host = pr.In.Host
		},
		Transport: proxyTransport,
		ErrorHandler: func(rw http.ResponseWriter, _ *http.Request, err error) {
			rw.WriteHeader(http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(rw, r)
}
