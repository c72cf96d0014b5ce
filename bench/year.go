package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
)

// Paths of the buyer interfaces the year's reads use (the bench drives the server over
// HTTP only; it imports no handler package).
const (
	apiPrefix      = "/api/v1"
	insightsPrefix = "/insights_api"
)

// YearOp is one operation timed on a database that holds a year of sessions
// (Options.PastSessions): a sweeper step, an export or an insights read. None of them may
// grow with the sessions of other campaigns or of past months.
type YearOp struct {
	Name string
	Took time.Duration
	// Size is what it returned: rows for a sweeper step, bytes for a read.
	Size int64
	Unit string
	Err  string
}

// measureYear times, once each and one after another, the sweeper's steps (called as the
// serve sweeper calls them) and a buyer's reads of a closed campaign of the past months and
// of the active campaign with the most sessions, through the running server.
func measureYear(ctx context.Context, dbURL string, t *Target, log *zap.Logger) []YearOp {
	db, err := persistence.Open(ctx, dbURL, log)
	if err != nil {
		return []YearOp{{Name: "open the database", Err: err.Error()}}
	}
	defer db.Close()
	var ops yearOps
	ops.sweeper(ctx, db)
	ops.reads(ctx, t, busiestCampaign(ctx, db, t.Market, log))
	return ops
}

// yearOps are the operations timed so far.
type yearOps []YearOp

// run times f, which returns the size of what it did in unit.
func (ops *yearOps) run(name, unit string, f func() (int64, error)) {
	start := time.Now()
	n, err := f()
	op := YearOp{Name: name, Took: time.Since(start), Size: n, Unit: unit}
	if err != nil {
		op.Err = err.Error()
	}
	*ops = append(*ops, op)
}

// sweeper times each step of the serve sweeper on db.
func (ops *yearOps) sweeper(ctx context.Context, db *persistence.DB) {
	count := func(ids []int64, err error) (int64, error) { return int64(len(ids)), err }
	ops.run("sweeper: release stale sessions (up to 5,000 per campaign)", "campaigns", func() (int64, error) {
		ids, _, err := db.Maintenance.ReleaseStaleSessions(ctx, 5000)
		return count(ids, err)
	})
	ops.run("sweeper: pause campaigns whose link looks broken", "campaigns", func() (int64, error) {
		return count(db.Maintenance.PauseBrokenLinks(ctx, 50, persistence.BrokenLinkScope{All: true}))
	})
	ops.run("sweeper: complete full campaigns", "campaigns", func() (int64, error) {
		return count(db.Maintenance.CompleteFullCampaigns(ctx, nil))
	})
	ops.run("sweeper: partitions of sessions (ranges recorded, ahead of the sequence)", "partitions created", func() (int64, error) {
		made, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{})
		return int64(len(made)), err
	})
	ops.run("sweeper: purge delivered postbacks (a batch of 5,000)", "rows", func() (int64, error) {
		return db.Maintenance.PurgeDeliveredOutbox(ctx, 90*24*time.Hour, 5000)
	})
	ops.run("sweeper: archive finished campaigns", "campaigns", func() (int64, error) {
		return count(db.Maintenance.ArchiveStaleCampaigns(ctx, 90*24*time.Hour))
	})
	ops.run("sweeper: analyze growing tables", "tables", func() (int64, error) {
		names, err := db.Maintenance.AnalyzeGrowingTables(ctx)
		return int64(len(names)), err
	})
}

// busiestCampaign is the active campaign with the most sessions in the market's own month
// (the sessions after the past ones); campaign 1 if the look-up fails.
func busiestCampaign(ctx context.Context, db *persistence.DB, m *Market, log *zap.Logger) int64 {
	busiest := int64(1)
	if err := db.Pool.QueryRow(ctx, `SELECT campaign_id FROM sessions WHERE id > $2 AND campaign_id <= $1
		GROUP BY campaign_id ORDER BY count(*) DESC LIMIT 1`, len(m.Campaigns), m.PastSessions).Scan(&busiest); err != nil {
		log.Warn("busiest campaign not found", zap.Error(err))
	}
	return busiest
}

// reads times a buyer's insights and exports of a closed campaign of the past months and of
// the active campaign busiest, through the server.
func (ops *yearOps) reads(ctx context.Context, t *Target, busiest int64) {
	m := t.Market
	closed := int64(len(m.Campaigns)) + m.PastCampaigns()/2
	client := &http.Client{Timeout: 5 * time.Minute}
	read := func(method, path, body string, buyer Account) (int64, error) {
		return readAs(ctx, client, method, t.PublicURL, path, body, buyer)
	}
	for _, c := range []struct {
		what string
		id   int64
	}{{"a closed campaign of the past months", closed}, {"the active campaign with the most sessions", busiest}} {
		b := m.BuyerOf(c.id) // each seeded campaign has a project of its own id
		ops.run(fmt.Sprintf("insights: results of %s (campaign %d)", c.what, c.id), "bytes", func() (int64, error) {
			return read("GET", fmt.Sprintf("%s/projects/%d/campaigns/%d", insightsPrefix, c.id, c.id), "", b)
		})
		ops.run("insights: its project", "bytes", func() (int64, error) {
			return read("GET", fmt.Sprintf("%s/projects/%d", insightsPrefix, c.id), "", b)
		})
		ops.run(fmt.Sprintf("export: demographics of %s", c.what), "bytes", func() (int64, error) {
			return read("POST", fmt.Sprintf("%s/campaigns/%d/export_demographics", apiPrefix, c.id), "{}", b)
		})
	}
	ops.run("insights: the buyer's projects (first page)", "bytes", func() (int64, error) {
		return read("GET", insightsPrefix+"/projects", "", m.BuyerOf(closed))
	})
}

// readAs sends a request for path of the server at base as buyer and returns the size of
// the answer, an error unless it is 200.
func readAs(ctx context.Context, client *http.Client, method, base, path, body string, buyer Account) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(buyer.Email, buyer.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %s: status %d", method, path, resp.StatusCode)
	}
	return n, err
}
