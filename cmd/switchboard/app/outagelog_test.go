package app_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestDatabaseOutageLogIsBounded cuts the app off its database for 3 s while eight clients
// ask for a buyer's campaigns as fast as they are answered (hundreds of 503s a second): the
// server logs the refusals as one incident, its start with the cause, a count per interval
// (here 500 ms) and its end with the total, instead of a warning and an access line per
// refused request (docs/operations.md, "A database outage in the log"). Every line of the
// process over the outage is counted, background loops included.
func TestDatabaseOutageLogIsBounded(t *testing.T) {
	const every, outage = 500 * time.Millisecond, 3 * time.Second
	link, url := pgtest.NewLink(t, pgtest.URL(t))
	core, logs := observer.New(zapcore.InfoLevel)
	s := apptest.Start(t, apptest.Options{DatabaseURL: url, RateLimit: -1, Log: zap.New(core), Configure: func(c *app.Config) {
		c.HTTP.IncidentEvery = every
	}})
	buyer := s.NewBuyer(t)
	campaigns := func() int {
		resp, err := s.Client.Do(buyer.Request(t, "GET", "/api/v1/campaigns", nil))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := campaigns(); st != http.StatusOK { // the buyer's authentication is cached from here on
		t.Fatalf("before the outage: %d", st)
	}
	before := logs.Len()

	link.Cut()
	var refused, requests atomic.Int64
	ctx, stop := context.WithTimeout(context.Background(), outage)
	defer stop()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				requests.Add(1)
				if campaigns() == http.StatusServiceUnavailable {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	link.Restore()
	deadline := time.Now().Add(15 * time.Second)
	for campaigns() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the database did not come back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The end is written once an interval passes without a refusal.
	ended := func() bool {
		for _, e := range logs.All()[before:] {
			if strings.HasPrefix(e.Message, "dependency available again") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(3*every + time.Second); !ended() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !ended() {
		t.Error("no line ends the incident")
	}

	lines := logs.All()[before:]
	byMessage := map[string]int{}
	var total int64
	for _, e := range lines {
		byMessage[e.LoggerName+": "+e.Message]++
		switch f := e.ContextMap(); {
		case strings.HasPrefix(e.Message, "dependency available again"):
			total = f["total"].(int64)
		case e.Message == "dependency unavailable: refusing requests":
			if f["path"] != "/api/v1/campaigns" || f["method"] != "GET" || f["error"] == "" || f["request_id"] == "" {
				t.Errorf("the incident's start line has %v, want the first refused request and its cause", f)
			}
		}
	}
	t.Logf("%d requests, %d refused 503 in %v; %d log lines: %v", requests.Load(), refused.Load(), outage, len(lines), byMessage)
	if refused.Load() < 100 {
		t.Fatalf("only %d requests refused: no load to log", refused.Load())
	}
	if total != refused.Load() {
		t.Errorf("the incident's end counts %d refusals, the clients saw %d", total, refused.Load())
	}
	if n := byMessage["http: dependency unavailable: refusing requests"]; n != 1 {
		t.Errorf("%d lines of the incident's start, want 1", n)
	}
	if n, most := byMessage["http: dependency still unavailable: requests refused"], int(outage/every)+2; n < 1 || n > most {
		t.Errorf("%d count lines, want 1 to %d", n, most)
	}
	// Besides the incident: the background loops' own once-per-outage lines.
	if len(lines) > 40 {
		t.Errorf("%d log lines for a %v outage, want at most 40", len(lines), outage)
	}
}
