package payout

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// TestWorkerRefusesInternalRedirects: a partner's postback URL that redirects (through its
// own host) to another address of the server's network is not followed there: the worker
// refuses the connection, dead-letters the postback at once (every retry would be refused
// alike), and what the partner reads (GET /supply_api/v4/postbacks) names no address. A
// postback whose own host refuses the connection is told so without the address either.
func TestWorkerRefusesInternalRedirects(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var internalHits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		internalHits.Add(1)
		_, _ = w.Write([]byte("secret"))
	}))
	defer internal.Close()
	closed := reservePort(t) // nothing listens: a port scan would learn "connection refused"
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop": // the chain's first hop stays on the partner's own host
			http.Redirect(w, r, "/to-internal?"+r.URL.RawQuery, http.StatusFound)
		case "/to-internal":
			http.Redirect(w, r, internal.URL+"/admin", http.StatusFound)
		case "/to-closed":
			http.Redirect(w, r, "http://"+closed+"/x", http.StatusFound)
		}
	}))
	defer partner.Close()
	chain := newPublisher(t, db, partner.URL+"/hop")
	toClosed := newPublisher(t, db, partner.URL+"/to-closed")
	down := newPublisher(t, db, "http://"+reservePort(t)+"/pb")
	enqueueOutcomes(t, db, chain, "chain")
	enqueueOutcomes(t, db, toClosed, "closed")
	enqueueOutcomes(t, db, down, "down")

	cfg := fastConfig()
	cfg.BaseBackoff, cfg.MaxBackoff = 100*time.Millisecond, 100*time.Millisecond
	startWorker(t, db, cfg)
	// By the second attempt of the postback that meets a closed port, the others would have
	// been retried too, had their failure been taken for a passing one.
	waitFor(t, "an attempt of every postback", 10*time.Second, func() bool {
		return countRows(t, db, `last_error IS NOT NULL OR delivered_at IS NOT NULL`) == 3 && countRows(t, db, `tid = 'down' AND attempts >= 2`) == 1
	})
	if n := internalHits.Load(); n != 0 {
		t.Fatalf("the internal address was requested %d times", n)
	}
	for _, pub := range []persistence.Publisher{chain, toClosed, down} {
		list, err := db.Outbox.ListPostbacks(context.Background(), persistence.PostbackFilter{PublisherID: pub.ID,
			States: persistence.PostbackFailures, Limit: 10})
		if err != nil || len(list) != 1 || list[0].LastError == nil {
			t.Fatalf("partner %d's failed postbacks: %+v, %v", pub.ID, list, err)
		}
		d := list[0]
		want, status, attempts := "redirect to a non-public address refused", "dead", 1
		if pub.ID == down.ID {
			want, status, attempts = "connection refused", "retrying", d.Attempts
		}
		if *d.LastError != want || d.Status != status || d.Attempts != attempts {
			t.Errorf("partner %d reads %s after %d attempts: %q; want %s after %d: %q", pub.ID, d.Status, d.Attempts, *d.LastError, status, attempts, want)
		}
		if strings.Contains(*d.LastError, "127.0.0.1") {
			t.Errorf("last_error %q names an address", *d.LastError)
		}
	}
}
