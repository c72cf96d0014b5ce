package payout

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func openDB(t *testing.T) *persistence.DB {
	t.Helper()
	db, err := persistence.Open(context.Background(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func newPublisher(t *testing.T, db *persistence.DB, postbackURL string) persistence.Publisher {
	t.Helper()
	p, _, err := db.Accounts.CreatePublisher(context.Background(), persistence.NewPublisher{
		Name: "p", CurrencyName: "coins", ExchangeRate: 100, RevenueShare: 0.6,
		RedirectURL: "https://app.test/back", PostbackURL: postbackURL, Environment: persistence.EnvStaging,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// enqueue builds a postback and stores it in tx, as the transaction of an outcome or a
// rejection does.
func enqueue(ctx context.Context, tx pgx.Tx, build func(persistence.Publisher, Fields) (persistence.Postback, error), pub persistence.Publisher, f Fields) error {
	pb, err := build(pub, f)
	if err != nil {
		return err
	}
	return persistence.EnqueuePostback(ctx, tx, pb)
}

func enqueueOutcomes(t *testing.T, db *persistence.DB, pub persistence.Publisher, tids ...string) {
	t.Helper()
	err := db.Tx(context.Background(), func(tx pgx.Tx) error {
		for _, tid := range tids {
			f := Fields{TID: tid, Status: outcome.Complete, Reward: 141, PayoutUSD: 14100, UserIdentifier: "u-" + tid,
				EventID: persistence.EventID(tid, persistence.OutcomeEventSeq)}
			if err := enqueue(context.Background(), tx, OutcomePostback, pub, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func tids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// fastConfig retries quickly so that outages of a second or two are many attempts.
func fastConfig() WorkerConfig {
	return WorkerConfig{Timeout: 2 * time.Second, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 150 * time.Millisecond,
		Window: time.Minute, Poll: 50 * time.Millisecond, Parallel: 4, StatsEvery: 50 * time.Millisecond}
}

func startWorker(t *testing.T, db *persistence.DB, cfg WorkerConfig) *Worker {
	t.Helper()
	w := NewWorker(db.Outbox, db.Feed, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go w.Run(ctx)
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.Done():
		case <-time.After(15 * time.Second):
			t.Error("worker did not stop")
		}
	})
	return w
}

// receiver is a partner's postback endpoint: it checks sech, and applies each tid once.
type receiver struct {
	t       *testing.T
	secret  string
	mu      sync.Mutex
	hits    map[string]int // every request, by tid
	oks     map[string]int // requests answered 2xx, by tid
	applied map[string]bool
	answer  func(tid string, first bool) int // status to answer; nil: 200
}

func newReceiver(t *testing.T, secret string) *receiver {
	return &receiver{t: t, secret: secret, hits: map[string]int{}, oks: map[string]int{}, applied: map[string]bool{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	secret := rc.secret
	rc.mu.Unlock()
	if !VerifySech(r.URL.RawQuery, secret) {
		rc.t.Errorf("postback with a bad sech: %s", r.URL.RawQuery)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	tid := q.Get("tid")
	if q.Get("status") != outcome.Complete || q.Get("payout_usd") != "1.4100" || q.Get("user_identifier") != "u-"+tid {
		rc.t.Errorf("postback fields: %v", q)
	}
	rc.mu.Lock()
	rc.hits[tid]++
	first := !rc.applied[tid]
	rc.applied[tid] = true // idempotent: keyed by tid
	status := http.StatusOK
	if rc.answer != nil {
		status = rc.answer(tid, first)
	}
	if status/100 == 2 {
		rc.oks[tid]++
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

// startPartner runs a partner's postback endpoint (answer: its status per request; nil:
// 200) for the life of the test and registers its publisher.
func startPartner(t *testing.T, db *persistence.DB, answer func(tid string, first bool) int) (*receiver, persistence.Publisher) {
	t.Helper()
	rc := newReceiver(t, "")
	rc.answer = answer
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	pub := newPublisher(t, db, srv.URL+"/pb")
	rc.setSecret(pub.APISecret)
	return rc, pub
}

func (rc *receiver) snapshot() (hits, oks map[string]int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	hits, oks = map[string]int{}, map[string]int{}
	for k, v := range rc.hits {
		hits[k] = v
	}
	for k, v := range rc.oks {
		oks[k] = v
	}
	return hits, oks
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countRows(t *testing.T, db *persistence.DB, where string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM postback_outbox WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func metric(t *testing.T, m *httpio.Metrics, name string) float64 {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(m.Append(nil)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not exposed", name)
	return 0
}

func TestEnqueue(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := context.Background()
	pub := newPublisher(t, db, "https://api.app.test/pb?k=1")
	none := newPublisher(t, db, "")

	enqueueOutcomes(t, db, pub, "A")
	enqueueOutcomes(t, db, pub, "A") // the same event's postback again: a no-op
	if n := countRows(t, db, `tid = 'A'`); n != 1 {
		t.Fatalf("%d rows for tid A, want 1", n)
	}
	var stored string
	if err := db.Pool.QueryRow(ctx, `SELECT url FROM postback_outbox WHERE tid = 'A'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	want := PostbackURL(pub, Fields{TID: "A", Status: outcome.Complete, Reward: 141, PayoutUSD: 14100, UserIdentifier: "u-A", EventID: "A.1"})
	if stored != want {
		t.Fatalf("stored %s, want %s", stored, want)
	}

	// A reversal of the same tid is a second, distinct postback.
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		return enqueue(ctx, tx, ReversalPostback, pub, Fields{TID: "A", Status: outcome.Complete, Reward: 141, PayoutUSD: 14100, UserIdentifier: "u-A"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT url FROM postback_outbox WHERE tid = 'A' AND kind = 'reversal'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stored, "&status=reversed&reward=141&payout_usd=1.4100&") {
		t.Fatalf("reversal URL %s", stored)
	}

	// Stored with the caller's transaction, or not at all.
	boom := fmt.Errorf("rolled back")
	err = db.Tx(ctx, func(tx pgx.Tx) error {
		if err := enqueue(ctx, tx, OutcomePostback, pub, Fields{TID: "B", Status: outcome.Complete}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Tx = %v", err)
	}
	if n := countRows(t, db, `tid = 'B'`); n != 0 {
		t.Fatalf("a rolled-back enqueue left %d rows", n)
	}

	// A publisher without a postback URL gets nothing.
	enqueueOutcomes(t, db, none, "C")
	if n := countRows(t, db, `publisher_id = $1`, none.ID); n != 0 {
		t.Fatalf("%d rows for a publisher without a postback URL", n)
	}

	// Many reversals in one statement; publishers without a postback URL are skipped, and a
	// repeat of an event's postback is a no-op.
	var batch []persistence.Postback
	for _, r := range []struct {
		pub persistence.Publisher
		f   Fields
	}{
		{pub, Fields{TID: "R1", Reward: 5, PayoutUSD: 500, EventID: "R1.2"}},
		{none, Fields{TID: "R2", Reward: 5, PayoutUSD: 500, EventID: "R2.2"}},
		{pub, Fields{TID: "R3", Status: outcome.Complete, Reward: 7, PayoutUSD: 700, EventID: "R3.2"}},
	} {
		pb, err := ReversalPostback(r.pub, r.f)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, pb)
	}
	for range 2 {
		if err := db.Tx(ctx, func(tx pgx.Tx) error { return persistence.EnqueuePostbacks(ctx, tx, batch) }); err != nil {
			t.Fatal(err)
		}
	}
	if n := countRows(t, db, `kind = 'reversal' AND tid IN ('R1', 'R2', 'R3') AND url LIKE '%&status=reversed&%'`); n != 2 {
		t.Fatalf("%d reversal rows, want 2", n)
	}

	// A postback needs a tid.
	if _, err := OutcomePostback(pub, Fields{Status: outcome.Complete}); err == nil {
		t.Fatal("OutcomePostback without a tid succeeded")
	}
}

// reservePort returns an address on which nothing listens (connection refused) until the
// test listens there itself.
func reservePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestWorkerDeliversAfterOutage(t *testing.T) {
	t.Parallel()
	db := openDB(t)

	// Partner A answers 503 during the outage; partner B's server is not running at all.
	var down atomic.Bool
	down.Store(true)
	recvA := newReceiver(t, "")
	recvA.answer = func(string, bool) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}
	srvA := httptest.NewServer(recvA)
	defer srvA.Close()
	addrB := reservePort(t)

	pubA := newPublisher(t, db, srvA.URL+"/pb?partner=a")
	pubB := newPublisher(t, db, "http://"+addrB+"/postback")
	recvA.setSecret(pubA.APISecret)
	recvB := newReceiver(t, pubB.APISecret)
	const n = 25
	enqueueOutcomes(t, db, pubA, tids("a", n)...)
	enqueueOutcomes(t, db, pubB, tids("b", n)...)

	m := httpio.NewMetrics()
	w := startWorker(t, db, fastConfig())
	w.RegisterMetrics(m)

	// Let the outage last for several attempts of every row.
	waitFor(t, "retries during the outage", 30*time.Second, func() bool {
		return countRows(t, db, `attempts >= 3`) == 2*n
	})
	if d := countRows(t, db, `delivered_at IS NOT NULL`); d != 0 {
		t.Fatalf("%d delivered during the outage", d)
	}
	var lastA, lastB string
	if err := db.Pool.QueryRow(context.Background(), `SELECT
		(SELECT last_error FROM postback_outbox WHERE publisher_id = $1 LIMIT 1),
		(SELECT last_error FROM postback_outbox WHERE publisher_id = $2 LIMIT 1)`, pubA.ID, pubB.ID).Scan(&lastA, &lastB); err != nil {
		t.Fatal(err)
	}
	if lastA != "status 503" || !strings.Contains(lastB, "refused") || strings.Contains(lastB, "sech") || strings.Contains(lastB, "/postback") {
		t.Fatalf("last errors %q, %q", lastA, lastB)
	}
	if metric(t, m, "switchboard_postbacks_failures_total") < 4*n {
		t.Fatalf("failures_total = %v", metric(t, m, "switchboard_postbacks_failures_total"))
	}

	// Both partners come back.
	down.Store(false)
	lnB, err := net.Listen("tcp", addrB)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addrB, err)
	}
	srvB := httptest.NewUnstartedServer(recvB)
	srvB.Listener.Close()
	srvB.Listener = lnB
	srvB.Start()
	defer srvB.Close()

	waitFor(t, "every postback delivered", 30*time.Second, func() bool {
		return countRows(t, db, `delivered_at IS NOT NULL`) == 2*n
	})
	for _, rc := range []struct {
		r      *receiver
		prefix string
	}{{recvA, "a"}, {recvB, "b"}} {
		_, oks := rc.r.snapshot()
		for _, tid := range tids(rc.prefix, n) {
			if oks[tid] != 1 {
				t.Errorf("tid %s acknowledged %d times, want 1", tid, oks[tid])
			}
		}
	}
	waitFor(t, "gauges refreshed", 5*time.Second, func() bool {
		return metric(t, m, "switchboard_postbacks_pending") == 0
	})
	if v := metric(t, m, "switchboard_postbacks_delivered_total"); v != 2*n {
		t.Fatalf("delivered_total = %v, want %d", v, 2*n)
	}
	if v := metric(t, m, "switchboard_postbacks_dead"); v != 0 {
		t.Fatalf("dead = %v", v)
	}
}

func TestTwoWorkersDeliverEachOnce(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var calls atomic.Int64
	// A flaky partner: a third of the requests fail, some of them after the partner applied
	// the postback (the answer is lost), which forces a redelivery of an applied tid.
	rc, pub := startPartner(t, db, func(tid string, first bool) int {
		switch calls.Add(1) % 6 {
		case 0:
			return http.StatusBadGateway
		case 3:
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})

	const n = 300
	all := tids("t", n)
	m1, m2 := httpio.NewMetrics(), httpio.NewMetrics()
	w1 := startWorker(t, db, fastConfig())
	w2 := startWorker(t, db, fastConfig())
	w1.RegisterMetrics(m1)
	w2.RegisterMetrics(m2)
	// Enqueue while both run, in several transactions.
	for i := 0; i < n; i += 50 {
		enqueueOutcomes(t, db, pub, all[i:i+50]...)
	}
	waitFor(t, "every postback delivered", 60*time.Second, func() bool {
		return countRows(t, db, `delivered_at IS NOT NULL`) == n
	})
	hits, oks := rc.snapshot()
	retried := 0
	for _, tid := range all {
		if hits[tid] < 1 {
			t.Errorf("tid %s never arrived", tid)
		}
		if oks[tid] != 1 { // no row was delivered by both workers
			t.Errorf("tid %s acknowledged %d times", tid, oks[tid])
		}
		if hits[tid] > 1 {
			retried++
		}
	}
	rc.mu.Lock()
	applied := len(rc.applied)
	rc.mu.Unlock()
	if applied != n {
		t.Fatalf("the idempotent receiver applied %d tids, want %d", applied, n)
	}
	// A worker counts a delivery once its mark has committed, so the last count can trail
	// the row the wait above saw.
	var d1, d2 float64
	waitFor(t, "every delivery counted", 10*time.Second, func() bool {
		d1 = metric(t, m1, "switchboard_postbacks_delivered_total")
		d2 = metric(t, m2, "switchboard_postbacks_delivered_total")
		return d1+d2 >= n
	})
	if d1+d2 != n || d1 == 0 || d2 == 0 {
		t.Fatalf("delivered by worker 1: %v, worker 2: %v; want both > 0, sum %d", d1, d2, n)
	}
	if retried == 0 {
		t.Fatal("no postback was retried: the flaky receiver did not bite")
	}
	t.Logf("worker 1 delivered %v, worker 2 %v; %d of %d tids arrived more than once", d1, d2, retried, n)
}

func TestLeaseExpiryRedelivers(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	_, pub := startPartner(t, db, nil)
	enqueueOutcomes(t, db, pub, "crash")

	// A worker claims the row and dies before delivering it.
	lease := 700 * time.Millisecond
	claimed, err := db.Outbox.ClaimPostbacks(context.Background(), 10, lease)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d rows", err, len(claimed))
	}
	claimedAt := time.Now()

	startWorker(t, db, fastConfig())
	waitFor(t, "redelivery after the lease", 10*time.Second, func() bool {
		return countRows(t, db, `delivered_at IS NOT NULL`) == 1
	})
	if elapsed := time.Since(claimedAt); elapsed < lease-100*time.Millisecond {
		t.Fatalf("delivered %v after the claim, inside its %v lease", elapsed, lease)
	}
	if n := countRows(t, db, `attempts = 2`); n != 1 {
		t.Fatal("the row was not claimed a second time")
	}
	// The dead worker's late failure report does not touch the row.
	if dead, err := db.Outbox.MarkPostbackFailed(context.Background(), claimed[0], time.Second, time.Minute, "late", false); err != nil || dead {
		t.Fatalf("late MarkPostbackFailed: %v, %v", dead, err)
	}
	if n := countRows(t, db, `delivered_at IS NOT NULL AND last_error IS NULL`); n != 1 {
		t.Fatal("a stale claim overwrote the delivered row")
	}
}

func TestDeadLetter(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	rc, pub := startPartner(t, db, func(string, bool) int { return http.StatusInternalServerError })
	refused := newPublisher(t, db, "http://"+reservePort(t)+"/pb")
	enqueueOutcomes(t, db, pub, "d1", "d2")
	enqueueOutcomes(t, db, refused, "d3")

	cfg := fastConfig()
	cfg.Window = 1500 * time.Millisecond
	m := httpio.NewMetrics()
	w := startWorker(t, db, cfg)
	w.RegisterMetrics(m)
	waitFor(t, "dead letters", 15*time.Second, func() bool {
		return countRows(t, db, `dead_at IS NOT NULL`) == 3
	})
	rows, err := db.Pool.Query(context.Background(), `SELECT tid, attempts, delivered_at IS NULL,
		EXTRACT(EPOCH FROM dead_at - created_at)::float8 FROM postback_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tid string
		var attempts int
		var undelivered bool
		var deadAfter float64
		if err := rows.Scan(&tid, &attempts, &undelivered, &deadAfter); err != nil {
			t.Fatal(err)
		}
		// Retried until the window closed, not longer.
		if !undelivered || attempts < 2 || deadAfter < cfg.Window.Seconds() || deadAfter > cfg.Window.Seconds()+5 {
			t.Errorf("dead letter %s: attempts %d, undelivered %v, dead %.3fs after enqueue (window %v)",
				tid, attempts, undelivered, deadAfter, cfg.Window)
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if n := countRows(t, db, `last_error = 'status 500'`); n != 2 {
		t.Fatalf("%d rows with last_error 'status 500'", n)
	}
	if n := countRows(t, db, `last_error LIKE '%refused%' AND last_error NOT LIKE '%sech%'`); n != 1 {
		t.Fatal("the refused postback's last_error is missing or carries the URL")
	}
	hits, _ := rc.snapshot()
	before := hits["d1"]
	waitFor(t, "gauges refreshed", 5*time.Second, func() bool {
		return metric(t, m, "switchboard_postbacks_dead") == 3 && metric(t, m, "switchboard_postbacks_pending") == 0
	})
	if v := metric(t, m, "switchboard_postbacks_dead_lettered_total"); v != 3 {
		t.Fatalf("dead_lettered_total = %v", v)
	}
	time.Sleep(300 * time.Millisecond)
	if hits, _ := rc.snapshot(); hits["d1"] != before {
		t.Fatal("a dead letter was retried")
	}
}

func TestEnqueueWakesWorker(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	rc, pub := startPartner(t, db, nil)

	cfg := fastConfig()
	cfg.Poll = time.Hour // only NOTIFY can wake it
	startWorker(t, db, cfg)
	time.Sleep(500 * time.Millisecond) // the worker is idle, listening
	for i := range 3 {
		start := time.Now()
		tid := "w" + strconv.Itoa(i)
		enqueueOutcomes(t, db, pub, tid)
		waitFor(t, "delivery after NOTIFY", 5*time.Second, func() bool {
			_, oks := rc.snapshot()
			return oks[tid] == 1
		})
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("delivered %v after enqueue", d)
		}
	}
}

// TestPartnerAnswers: what a partner's endpoint answers decides delivered or retried.
func TestPartnerAnswers(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	big := strings.Repeat("x", 3*maxPostbackBody)
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/big?"+r.URL.RawQuery, http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(big)) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop?"+r.URL.RawQuery, http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cases := []struct {
		path, tid string
		delivered bool
		reason    string // in last_error when not delivered
	}{
		{"/redirect/", "redirected-big", true, ""},
		{"/loop", "loop", false, "redirect"},
		{"/slow", "slow", false, "timeout"},
	}
	for _, c := range cases {
		enqueueOutcomes(t, db, newPublisher(t, db, srv.URL+c.path), c.tid)
	}
	cfg := fastConfig()
	cfg.Timeout = 500 * time.Millisecond
	cfg.BaseBackoff = time.Minute // one attempt each
	startWorker(t, db, cfg)
	waitFor(t, "one attempt each", 10*time.Second, func() bool {
		return countRows(t, db, `delivered_at IS NOT NULL OR last_error IS NOT NULL`) == len(cases)
	})
	for _, c := range cases {
		var delivered bool
		var lastError string
		if err := db.Pool.QueryRow(context.Background(), `SELECT delivered_at IS NOT NULL, COALESCE(last_error, '')
			FROM postback_outbox WHERE tid = $1`, c.tid).Scan(&delivered, &lastError); err != nil {
			t.Fatal(err)
		}
		if delivered != c.delivered || !strings.Contains(lastError, c.reason) {
			t.Errorf("%s: delivered %v, last_error %q; want delivered %v, last_error with %q", c.tid, delivered, lastError, c.delivered, c.reason)
		}
	}
}

// TestSendDeliversLeased: a postback handed over by Send (stored leased to this process) is
// delivered at once, without another claim.
func TestSendDeliversLeased(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	rc, pub := startPartner(t, db, nil)
	enqueueOutcomes(t, db, pub, "handed")
	claimed, err := db.Outbox.ClaimPostbacks(context.Background(), 10, time.Hour)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d rows", err, len(claimed))
	}
	w := startWorker(t, db, fastConfig())
	if !w.Send(claimed[0]) {
		t.Fatal("Send refused an idle worker")
	}
	sent := time.Now()
	waitFor(t, "the handed-over postback delivered", 5*time.Second, func() bool {
		return countRows(t, db, `delivered_at IS NOT NULL AND attempts = 1`) == 1
	})
	t.Logf("delivered %v after Send", time.Since(sent).Round(time.Millisecond))
	if hits, _ := rc.snapshot(); hits["handed"] != 1 {
		t.Fatalf("partner hit %d times", hits["handed"])
	}
}
