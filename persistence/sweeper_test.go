package persistence_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestArchiveStaleCampaigns: campaigns 3 Complete or 6 Reconciled for 90 days become
// 4 Archived (docs/rules.md §4), exactly once even when several processes sweep at once, and each
// one moved is announced on the campaign channel; no other campaign changes.
func TestArchiveStaleCampaigns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := persistence.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	buyer, _, err := db.Accounts.CreateBuyer(ctx, "archive@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		status   int
		days     int // since the status changed
		archived bool
		id       int64
	}{
		{name: "complete 91 days", status: persistence.StatusComplete, days: 91, archived: true},
		{name: "reconciled 91 days", status: persistence.StatusReconciled, days: 91, archived: true},
		{name: "complete 89 days", status: persistence.StatusComplete, days: 89},
		{name: "reconciled 89 days", status: persistence.StatusReconciled, days: 89},
		{name: "active 91 days", status: persistence.StatusActive, days: 91},
		{name: "paused 91 days", status: persistence.StatusPaused, days: 91},
		{name: "system paused 91 days", status: persistence.StatusSystemPaused, days: 91},
		{name: "archived 91 days", status: persistence.StatusArchived, days: 91},
	}
	var want []int64
	for i := range cases {
		c := &cases[i]
		c.id = newCampaign(t, db, buyer.ID, c.name)
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = $2, status_changed_at = now() - make_interval(days => $3)
			WHERE id = $1`, c.id, c.status, c.days); err != nil {
			t.Fatal(err)
		}
		if c.archived {
			want = append(want, c.id)
		}
	}

	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{persistence.CampaignChannel}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	// Several processes sweep at once: together they move each campaign once.
	var (
		mu  sync.Mutex
		got []int64
		wg  sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := db.Maintenance.ArchiveStaleCampaigns(ctx, 90*24*time.Hour)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, ids...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("moved %v, want %v once each", got, want)
	}
	if heard := notifications(t, listener); !slices.Equal(heard, want) {
		t.Errorf("announced %v, want %v", heard, want)
	}

	for _, c := range cases {
		var status int
		var fresh bool
		if err := db.Pool.QueryRow(ctx, `SELECT status, status_changed_at > now() - interval '1 hour' FROM campaigns WHERE id = $1`,
			c.id).Scan(&status, &fresh); err != nil {
			t.Fatal(err)
		}
		wantStatus := c.status
		if c.archived {
			wantStatus = persistence.StatusArchived
		}
		if status != wantStatus || fresh != c.archived {
			t.Errorf("%s: status %d, status_changed_at now: %v; want %d, %v", c.name, status, fresh, wantStatus, c.archived)
		}
	}

	// Idempotent: a second sweep moves and announces nothing.
	if ids, err := db.Maintenance.ArchiveStaleCampaigns(ctx, 90*24*time.Hour); err != nil || len(ids) != 0 {
		t.Errorf("second sweep: %v, %v; want nothing", ids, err)
	}
	if heard := notifications(t, listener); len(heard) != 0 {
		t.Errorf("second sweep announced %v", heard)
	}
}

// notifications collects the campaign ids announced to conn until it has been quiet for a
// moment, sorted.
func notifications(t *testing.T, conn *pgx.Conn) []int64 {
	t.Helper()
	var out []int64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				t.Fatal(err)
			}
			slices.Sort(out)
			return out
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			t.Fatal(fmt.Errorf("payload %q: %w", n.Payload, err))
		}
		out = append(out, id)
	}
}

// TestClaimSweep: of processes claiming the fleet's sweep at once, exactly one wins, with the
// next turn; none wins again before after has passed since that claim; the turns count on.
func TestClaimSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		turns []int64
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn, ok, err := db.Maintenance.ClaimSweep(ctx, time.Hour)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				turns = append(turns, turn)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if !slices.Equal(turns, []int64{1}) {
		t.Fatalf("turns won by 8 claims at once: %v, want [1]", turns)
	}
	if _, ok, err := db.Maintenance.ClaimSweep(ctx, time.Hour); err != nil || ok {
		t.Fatalf("a claim within the hour after the last: ok %v, %v; want refused", ok, err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE sweeper_turns SET at = now() - interval '61 minutes'`); err != nil {
		t.Fatal(err)
	}
	if turn, ok, err := db.Maintenance.ClaimSweep(ctx, time.Hour); err != nil || !ok || turn != 2 {
		t.Fatalf("a claim an hour after the last: turn %d, ok %v, %v; want turn 2", turn, ok, err)
	}
	// An operator's DELETE does not stop the sweeps: the next claim makes the row again.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM sweeper_turns`); err != nil {
		t.Fatal(err)
	}
	if turn, ok, err := db.Maintenance.ClaimSweep(ctx, time.Hour); err != nil || !ok || turn != 1 {
		t.Fatalf("a claim with no row: turn %d, ok %v, %v; want turn 1", turn, ok, err)
	}
}

// TestCompleteFullCampaigns: an active campaign moves to 3 Complete when it has a non-global
// quota and every non-global quota is full (by completes, or by entries when click-balanced);
// global quotas count for neither; a campaign not active, or not among the ids given, stays.
func TestCompleteFullCampaigns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedDB(t)
	buyer := newBuyer(t, db, "full@example.test")
	type quota struct {
		global, clicks          bool
		num, completes, entries int
	}
	cases := []struct {
		name     string
		status   int
		quotas   []quota
		listed   bool // among the ids of the targeted call
		complete bool
		id       int64
	}{
		{name: "every quota full", status: persistence.StatusActive, listed: true, complete: true,
			quotas: []quota{{num: 5, completes: 5}, {num: 3, completes: 4}}},
		{name: "one quota short", status: persistence.StatusActive, listed: true,
			quotas: []quota{{num: 5, completes: 5}, {num: 3, completes: 2}}},
		{name: "click-balanced full by entries", status: persistence.StatusActive, listed: true, complete: true,
			quotas: []quota{{clicks: true, num: 10, entries: 10}}},
		{name: "click-balanced with completes only", status: persistence.StatusActive, listed: true,
			quotas: []quota{{clicks: true, num: 10, completes: 10, entries: 9}}},
		{name: "a global quota short does not hold it", status: persistence.StatusActive, listed: true, complete: true,
			quotas: []quota{{num: 5, completes: 5}, {global: true, num: 100, completes: 5}}},
		{name: "only global quotas", status: persistence.StatusActive, listed: true,
			quotas: []quota{{global: true, num: 5, completes: 5}}},
		{name: "no quota", status: persistence.StatusActive, listed: true},
		{name: "paused", status: persistence.StatusPaused, listed: true,
			quotas: []quota{{num: 5, completes: 5}}},
		{name: "full, not listed", status: persistence.StatusActive,
			quotas: []quota{{num: 5, completes: 5}}},
	}
	var listed []int64
	for i := range cases {
		c := &cases[i]
		c.id = newCampaign(t, db, buyer, c.name)
		if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = $2 WHERE id = $1`, c.id, c.status); err != nil {
			t.Fatal(err)
		}
		for _, q := range c.quotas {
			if _, err := db.Pool.Exec(ctx, `INSERT INTO campaign_quotas (campaign_id, is_global, is_click_balanced, num_respondents, completes, entries)
				VALUES ($1, $2, $3, $4, $5, $6)`, c.id, q.global, q.clicks, q.num, q.completes, q.entries); err != nil {
				t.Fatal(err)
			}
		}
		if c.listed {
			listed = append(listed, c.id)
		}
	}
	// check: the call returned wantMoved, and the campaigns 3 Complete are wantComplete.
	check := func(call string, moved, wantMoved, wantComplete []int64) {
		t.Helper()
		slices.Sort(moved)
		if !slices.Equal(moved, wantMoved) {
			t.Errorf("%s: moved %v, want %v", call, moved, wantMoved)
		}
		for _, c := range cases {
			var status int
			if err := db.Pool.QueryRow(ctx, `SELECT status FROM campaigns WHERE id = $1`, c.id).Scan(&status); err != nil {
				t.Fatal(err)
			}
			if (status == persistence.StatusComplete) != slices.Contains(wantComplete, c.id) {
				t.Errorf("%s: %s: status %d", call, c.name, status)
			}
		}
	}
	var full []int64
	for _, c := range cases {
		if c.complete {
			full = append(full, c.id)
		}
	}
	last := cases[len(cases)-1].id // full, not listed
	moved, err := db.Maintenance.CompleteFullCampaigns(ctx, listed)
	if err != nil {
		t.Fatal(err)
	}
	check("the listed campaigns", moved, full, full)
	// Every active campaign: the unlisted full one now too; those moved before are not again.
	moved, err = db.Maintenance.CompleteFullCampaigns(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("every campaign", moved, []int64{last}, append(slices.Clone(full), last))
}
