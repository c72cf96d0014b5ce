package payout

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// labelled is the value of metric name{labels} on m, and whether it is exposed.
func labelled(t *testing.T, m *httpio.Metrics, name, labels string) (float64, bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(m.Append(nil)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+"{"+labels+"} "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f, true
		}
	}
	return 0, false
}

// slowEndpoint answers after d (or when the request is abandoned), fast an endpoint that
// answers at once; both count their requests by tid.
func slowEndpoint(t *testing.T, db *persistence.DB, d time.Duration) (*receiver, persistence.Publisher) {
	t.Helper()
	rc := newReceiver(t, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		rc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	pub := newPublisher(t, db, srv.URL+"/pb")
	rc.setSecret(pub.APISecret)
	return rc, pub
}

// TestSlowPartnerDelaysNoOther: a partner whose endpoint outlasts the timeout, with many
// postbacks pending ahead of another partner's, holds only its share of the delivery slots:
// the other partner's postbacks go out at once, and /metrics shows the slow one's lag.
func TestSlowPartnerDelaysNoOther(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	_, slow := slowEndpoint(t, db, 3*time.Second)
	fastRC, fast := startPartner(t, db, nil)
	enqueueOutcomes(t, db, slow, tids("slow", 64)...)
	enqueueOutcomes(t, db, fast, tids("fast", 20)...)

	cfg := fastConfig()
	cfg.Timeout, cfg.Parallel, cfg.PerDestination = 300*time.Millisecond, 8, 2
	cfg.BaseBackoff, cfg.MaxBackoff = 50*time.Millisecond, 100*time.Millisecond
	m := httpio.NewMetrics()
	start := time.Now()
	w := startWorker(t, db, cfg)
	w.RegisterMetrics(m)
	waitFor(t, "the fast partner's postbacks", 10*time.Second, func() bool {
		return countRows(t, db, `publisher_id = $1 AND delivered_at IS NOT NULL`, fast.ID) == 20
	})
	took := time.Since(start)
	t.Logf("the fast partner's 20 postbacks delivered %v after the start, beside 64 timing out", took.Round(time.Millisecond))
	// The slow partner's 64 would take 64 / 8 × 300 ms = 2.4 s of every slot.
	if took > 1200*time.Millisecond {
		t.Errorf("the fast partner waited %v for the slow one", took)
	}
	if _, oks := fastRC.snapshot(); len(oks) != 20 {
		t.Errorf("the fast partner acknowledged %d tids", len(oks))
	}
	slowLabel := `publisher="` + strconv.FormatInt(slow.ID, 10) + `"`
	fastLabel := `publisher="` + strconv.FormatInt(fast.ID, 10) + `"`
	waitFor(t, "the lags on /metrics", 5*time.Second, func() bool {
		lag, ok := labelled(t, m, "switchboard_postbacks_partner_lag_seconds", slowLabel)
		pending, _ := labelled(t, m, "switchboard_postbacks_partner_pending", slowLabel)
		fastLag, _ := labelled(t, m, "switchboard_postbacks_partner_lag_seconds", fastLabel)
		return ok && lag > 0.3 && pending == 64 && fastLag == 0
	})
}

// TestHandedOverPostbackOutlivesNoLease: postbacks handed over by Send (stored leased to
// this process) that wait for a slot longer than their lease allows are given back to the
// table rather than sent late: no postback is sent twice, from this worker's queue and by
// another process's worker that claimed it once its lease ran out.
func TestHandedOverPostbackOutlivesNoLease(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	rc, pub := slowEndpoint(t, db, 150*time.Millisecond)
	const n = 40
	enqueueOutcomes(t, db, pub, tids("h", n)...)
	cfg := fastConfig()
	cfg.Timeout, cfg.Lease, cfg.Parallel, cfg.PerDestination = 500*time.Millisecond, time.Second, 4, 2
	claimed, err := db.Outbox.ClaimPostbacks(context.Background(), n, cfg.Lease)
	if err != nil || len(claimed) != n {
		t.Fatalf("claim: %d rows, %v", len(claimed), err)
	}
	w := startWorker(t, db, cfg)
	startWorker(t, db, cfg) // another process's
	for _, c := range claimed {
		if !w.Send(c) {
			t.Fatal("Send refused")
		}
	}
	waitFor(t, "every postback delivered", 20*time.Second, func() bool {
		return countRows(t, db, `delivered_at IS NOT NULL`) == n
	})
	hits, _ := rc.snapshot()
	for _, tid := range tids("h", n) {
		if hits[tid] != 1 {
			t.Errorf("tid %s sent %d times", tid, hits[tid])
		}
	}
	if k := countRows(t, db, `attempts > 1`); k != 0 {
		t.Errorf("%d postbacks counted more than one attempt", k)
	}
}
