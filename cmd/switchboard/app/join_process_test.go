package app_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// A process that starts while another serves the same database joins gently, its loads
// paced to the share of the clock it was given, and gets every core back once its loads are
// in; the first process, alone when it started, did not.
func TestJoiningProcessLoadsGently(t *testing.T) {
	url := pgtest.URL(t)
	procs := runtime.GOMAXPROCS(0)
	first := apptest.Start(t, apptest.Options{DatabaseURL: url})
	if first.App.Joining {
		t.Fatal("the first process joined: nobody served before it")
	}
	// Its heartbeat, with its engine loaded, is what the second one sees.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ps, _, err := first.DB.Maintenance.ServeProcesses(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 1 && !ps[0].SnapshotAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat of the first process: %+v", ps)
		}
	}
	core, logs := observer.New(zap.InfoLevel)
	const share = 0.3
	second := apptest.Start(t, apptest.Options{DatabaseURL: url, Log: zap.New(core),
		Configure: func(c *app.Config) { c.JoinLoadShare = share }})
	if !second.App.Joining {
		t.Fatal("the second process did not join gently beside a serving one")
	}
	joined := logs.FilterMessage("joining serving processes: loading with one stream and one core, paced").All()
	if len(joined) != 1 || joined[0].ContextMap()["duty"] != share {
		t.Errorf("the joining process's log: %+v, want one entry with duty %v", joined, share)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := second.Client.Get(second.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && runtime.GOMAXPROCS(0) == procs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %d, GOMAXPROCS %d (want %d) after the loads", resp.StatusCode, runtime.GOMAXPROCS(0), procs)
		}
	}
}
