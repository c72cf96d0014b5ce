package router

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// notifier debounces what this process tells the others: campaign ids whose counts changed
// (CountsChannel) and admitted entries (EntriesChannel), one NOTIFY each per period.
type notifier struct {
	db     *persistence.DB
	origin string
	every  time.Duration
	log    *zap.Logger

	mu      sync.Mutex
	camps   map[int64]struct{}
	quotas  map[int64]struct{} // campaigns of which only the quota counts changed (entries)
	full    map[int64]struct{} // campaigns that got a complete: are all their quotas full?
	entries []string
	kick    chan struct{}

	// outage backs the flush off while the database is away and logs once per state
	// change; only run's goroutine touches it.
	outage *retry.Outage
}

func newNotifier(db *persistence.DB, origin string, every time.Duration, log *zap.Logger) *notifier {
	return &notifier{db: db, origin: origin, every: every, log: log, camps: map[int64]struct{}{}, quotas: map[int64]struct{}{}, full: map[int64]struct{}{}, kick: make(chan struct{}, 1),
		outage: retry.NewOutage(log, "counts flush", retry.Default, nil)}
}

func (n *notifier) counts(campaignID int64) {
	n.mu.Lock()
	n.camps[campaignID] = struct{}{}
	n.mu.Unlock()
}

// quotaCounts announces an admitted entry's campaign: only its quota counts changed.
func (n *notifier) quotaCounts(campaignID int64) {
	n.mu.Lock()
	n.quotas[campaignID] = struct{}{}
	n.mu.Unlock()
}

// completed asks for a check whether the campaign's non-global quotas are all full now (it
// then becomes 3 Complete). The database decides, at the next flush.
func (n *notifier) completed(campaignID int64) {
	n.mu.Lock()
	n.full[campaignID] = struct{}{}
	n.mu.Unlock()
}

func (n *notifier) entry(participantID, campaignID, at int64) {
	item := strconv.FormatInt(participantID, 10) + ":" + strconv.FormatInt(campaignID, 10) + ":" + strconv.FormatInt(at, 10)
	n.mu.Lock()
	if len(n.entries) < 100_000 {
		n.entries = append(n.entries, item)
	}
	n.mu.Unlock()
}

func (n *notifier) run(ctx context.Context) {
	t := time.NewTicker(n.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			n.flush(context.Background())
			return
		case <-t.C:
			// After a failure the next flush waits for its backoff; what is pending meanwhile
			// stays queued (entries up to their cap).
			if n.outage.Due() {
				n.flush(ctx)
			}
		}
	}
}

// flush sends what is pending. Failures are reported to n.outage, which logs the first of an
// outage and its end: once per state change, not once per flush.
func (n *notifier) flush(ctx context.Context) {
	n.mu.Lock()
	if len(n.camps) == 0 && len(n.quotas) == 0 && len(n.entries) == 0 && len(n.full) == 0 {
		n.mu.Unlock()
		return
	}
	var full []int64
	for id := range n.full {
		full = append(full, id)
	}
	clear(n.full)
	ids := make([]int64, 0, len(n.camps))
	for id := range n.camps {
		ids = append(ids, id)
	}
	quotas := make([]int64, 0, len(n.quotas))
	for id := range n.quotas {
		if _, whole := n.camps[id]; !whole {
			quotas = append(quotas, id)
		}
	}
	clear(n.camps)
	clear(n.quotas)
	entries := n.entries
	n.entries = nil
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var failed error
	// Entries that fail are dropped: other processes learn them when they reload.
	if err := n.db.Feed.NotifyEntries(ctx, n.origin, entries); err != nil {
		failed = err
	}
	// Counts that fail are left to reconciliation, which catches up.
	if err := n.db.Feed.NotifyCounts(ctx, ids); err != nil && failed == nil {
		failed = err
	}
	if err := n.db.Feed.NotifyQuotaCounts(ctx, quotas); err != nil && failed == nil {
		failed = err
	}
	if len(full) > 0 {
		done, err := n.db.Maintenance.CompleteFullCampaigns(ctx, full)
		if err != nil {
			// A lock conflict with concurrent callbacks must not leave a full campaign
			// active until the sweeper: retry with a later flush.
			if failed == nil {
				failed = err
			}
			n.mu.Lock()
			for _, id := range full {
				n.full[id] = struct{}{}
			}
			n.mu.Unlock()
		}
		for _, id := range done {
			n.log.Info("campaign complete: every quota is full", zap.Int64("campaign", id))
		}
	}
	switch {
	case failed == nil:
		n.outage.Succeeded()
	case !errors.Is(ctx.Err(), context.Canceled): // not shutting down
		n.outage.Failed(failed)
	}
}

// countsLoadSlice is how many campaigns one snapshot of the counters' full load reads. The
// whole market in one snapshot (270,000 quota rows at 100,000 campaigns, paced over seconds
// when the process joins others) kept alive every version of the quota rows the serving
// processes update on each entry, and its one aggregate of the daily counts took a core of
// PostgreSQL for 1.6 s that no pacing could spread. A campaign's counts read in one slice
// agree; one changed after its slice was read is notified, and re-read.
const countsLoadSlice = 2048

// listenCounts keeps the engine's counters equal to the database: campaigns named on
// CountsChannel are re-read within a debounce period; every active campaign after the
// LISTEN connection is (re)established, a slice at a time; and, as the safety net under
// lost notifications, the next ReconcileSlice active campaigns every ReconcileEvery. Re-reading the whole
// market every few seconds would cost in proportion to its size (at 100,000 campaigns,
// 270,000 quota rows every 3 s).
func (r *Router) listenCounts(ctx context.Context) {
	var after int64 // the last campaign id the safety walk re-read (0: start over)
	full := func(ctx context.Context) error {
		for from := int64(0); ; {
			last, err := r.countsAfter(ctx, from, countsLoadSlice)
			if err != nil {
				return err
			}
			if last == 0 {
				break
			}
			from = last
		}
		r.countsOnce.Do(func() { close(r.countsLoaded) })
		return nil
	}
	safety := func(ctx context.Context) error {
		last, err := r.countsAfter(ctx, after, r.cfg.ReconcileSlice)
		if err != nil {
			return err
		}
		after = last
		return nil
	}
	mirror.Run(ctx, mirror.Config[countsChange]{
		Name:   "counters",
		Log:    r.log,
		Listen: mirror.Listener(r.db.Feed.ListenOn, persistence.CountsChannel),
		Notified: func(payload string, add func(countsChange)) {
			persistence.ParseCounts(payload, func(id int64, quotasOnly bool) { add(countsChange{id, quotasOnly}) })
		},
		Debounce: r.cfg.NotifyEvery, // let a burst of notifications gather
		Reload:   r.reconcileCounts,
		Full:     full,
		Every:    r.cfg.ReconcileEvery,
		Safety:   safety,
	})
}

// CountsLoaded is closed once the counters of every active campaign have been read from
// the database after start: until then a full quota may look open to this process.
func (r *Router) CountsLoaded() <-chan struct{} { return r.countsLoaded }

// countsAfter sets the counters of at most limit active campaigns above id after to the
// database's values, and returns the last id read (0: none left), as CountsAfter.
func (r *Router) countsAfter(ctx context.Context, after int64, limit int) (int64, error) {
	last, err := r.db.Feed.CountsAfter(ctx, after, limit, &r.countRows)
	if err == nil {
		r.setCounts(&r.countRows)
	}
	return last, err
}

// countsChange is a campaign named on CountsChannel, and whether only its quota counts
// changed.
type countsChange struct {
	campaignID int64
	quotasOnly bool
}

// reconcileCounts sets the counters of the campaigns named to the database's values: the
// quota counts alone of those only their quotas changed of (a campaign named both ways is
// read wholly: CountsOf).
func (r *Router) reconcileCounts(ctx context.Context, changes []countsChange) error {
	whole, quotas := r.countsWhole[:0], r.countsQuotas[:0]
	for _, c := range changes {
		if c.quotasOnly {
			quotas = append(quotas, c.campaignID)
		} else {
			whole = append(whole, c.campaignID)
		}
	}
	r.countsWhole, r.countsQuotas = whole, quotas
	if err := r.db.Feed.CountsOf(ctx, whole, quotas, &r.countRows); err != nil {
		return err
	}
	r.setCounts(&r.countRows)
	return nil
}

// setCounts sets the engine's counters to counts read from the database.
func (r *Router) setCounts(rows *persistence.CountRows) {
	c := r.eng.Counters()
	for _, q := range rows.Quotas {
		c.SetQuota(q.QuotaID, engine.QuotaCounts{Completes: q.Completes, InProgress: q.InProgress, Entries: q.Entries})
	}
	for _, k := range rows.Campaigns {
		c.SetCampaign(k.CampaignID, engine.CampaignCounts{Day: k.Day.Unix() / 86400, DayCompletes: k.DayCompletes,
			Sessions: k.Outcomes, Completes: k.Completes})
	}
}

// listenEntries records other processes' admitted entries in this process's panel, so that
// reentry and relationship rules see them at once.
func (r *Router) listenEntries(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[struct{}]{Name: "entries", Log: r.log,
		Listen:   mirror.Listener(r.db.Feed.ListenOn, persistence.EntriesChannel),
		Notified: func(payload string, _ func(struct{})) { r.recordEntries(payload) },
		// Runs once the LISTEN is up: every entry committed from then on is heard.
		Full: func(context.Context) error {
			r.entriesOnce.Do(func() { close(r.entriesHeard) })
			return nil
		}})
}

// EntriesHeard is closed once this process hears of the entries other processes admit: an
// entry committed later reaches its panel by notification, so a load that reads the entries
// committed until some moment after it (a snapshot's catch-up) misses none.
func (r *Router) EntriesHeard() <-chan struct{} { return r.entriesHeard }

// recordEntries records the entries of one EntriesChannel notification.
func (r *Router) recordEntries(payload string) {
	origin, items, ok := strings.Cut(payload, "|")
	if !ok || origin == r.origin {
		return
	}
	for _, it := range strings.Split(items, ",") {
		f := strings.SplitN(it, ":", 3)
		if len(f) != 3 {
			continue
		}
		pid, e1 := strconv.ParseInt(f[0], 10, 64)
		cid, e2 := strconv.ParseInt(f[1], 10, 64)
		at, e3 := strconv.ParseInt(f[2], 10, 64)
		if e1 == nil && e2 == nil && e3 == nil {
			r.panel.RecordEntry(pid, cid, at)
		}
	}
}

// outboxPurgeBatch is how many delivered postbacks one short transaction of the sweeper
// deletes.
const outboxPurgeBatch = 5000

// runSweeper periodically releases stale sessions, pauses campaigns with broken links,
// keeps partitions of sessions ahead of the id sequence, purges old delivered postbacks,
// completes full campaigns and archives long-finished ones, from when after closes (nil: at
// once). Every process ticks it and the processes take turns (sweepTurn); each step is
// idempotent, so a sweep cut short is finished by the next.
func (r *Router) runSweeper(ctx context.Context, after <-chan struct{}) {
	if after != nil {
		select {
		case <-after:
		case <-ctx.Done():
			return
		}
	}
	r.every(ctx, r.cfg.SweepEvery, "sweeper", r.sweepTurn)
}

// sweepTurn sweeps when this process wins the fleet's turn: no process's sweep began in the
// last nine tenths of a period (persistence.DB.ClaimSweep), so that the processes sharing the
// database sweep about once a period between them, and one alone on each of its ticks.
func (r *Router) sweepTurn(ctx context.Context) error {
	turn, ok, err := r.db.Maintenance.ClaimSweep(ctx, r.cfg.SweepEvery*9/10)
	if err != nil || !ok {
		return err
	}
	return r.sweep(ctx, turn-1)
}

// runAnalyzer refreshes the planner statistics of the routing tables that have about
// doubled since their last ANALYZE, every AnalyzeEvery: the sweeper's period (30 s) let a
// fresh database run its first tens of thousands of entries and callbacks on plans made
// when sessions was empty (a whole partition read per callback batch: 1.3 ms of
// PostgreSQL per callback instead of 0.14). The check is one catalog query; processes
// sharing the database take turns.
func (r *Router) runAnalyzer(ctx context.Context) {
	r.every(ctx, r.cfg.AnalyzeEvery, "planner statistics", func(ctx context.Context) error {
		tables, err := r.db.Maintenance.AnalyzeGrowingTables(ctx)
		if err == nil && len(tables) > 0 {
			r.log.Debug("analyzed growing tables", zap.Strings("tables", tables))
		}
		return err
	})
}

// every runs f each period until ctx ends; a failing f is logged once (as what) until it
// succeeds again.
func (r *Router) every(ctx context.Context, period time.Duration, what string, f func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	outage := retry.NewOutage(r.log, what, retry.Default, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			outage.Attempt(ctx, f)
		}
	}
}

// pauseBrokenLinks system-pauses the campaigns whose link looks broken, looking at those
// whose entries this sweep released and at this sweep's slice of every active campaign
// (Config.BrokenLinkSlices, persistence.BrokenLinkScope).
func (r *Router) pauseBrokenLinks(ctx context.Context, released map[int64]struct{}, turn int64) error {
	scope := persistence.BrokenLinkScope{IDs: slices.Collect(maps.Keys(released))}
	if n := r.cfg.BrokenLinkSlices; n > 0 {
		scope.Slices, scope.Slice = n, int(turn%int64(n))
	}
	if len(scope.IDs) == 0 && scope.Slices == 0 {
		return nil
	}
	ids, err := r.db.Maintenance.PauseBrokenLinks(ctx, r.cfg.BrokenLinkEntries, scope)
	if err != nil {
		return err
	}
	for _, id := range ids {
		r.log.Warn("campaign system-paused: its link looks broken", zap.Int64("campaign", id))
	}
	return nil
}

// Sweep runs the sweeper's steps once, now, whatever the fleet's turns (an operator's or a
// test's sweep; the broken-link slice follows this process's own count). A step that fails
// does not stop the others; the error names every step that failed.
func (r *Router) Sweep(ctx context.Context) error { return r.sweep(ctx, r.sweeps.Add(1)-1) }

// sweep is Sweep as the turn-th sweep (from 0), whose broken-link slice is turn's.
func (r *Router) sweep(ctx context.Context, turn int64) error {
	start := time.Now()
	var release time.Duration
	defer func() { r.sweepStats.add(time.Since(start), release) }()
	var errs []error
	if dropped, err := r.db.Maintenance.RetireSessionIndexes(ctx); err != nil {
		errs = append(errs, fmt.Errorf("retiring indexes of sessions: %w", err))
	} else if dropped {
		r.log.Info("retired the indexes of sessions no serving release reads")
	}
	released := map[int64]struct{}{}
	releaseStart := time.Now()
	for {
		ids, more, err := r.db.Maintenance.ReleaseStaleSessions(ctx, 5000)
		if err != nil {
			errs = append(errs, fmt.Errorf("releasing stale sessions: %w", err))
			break
		}
		for _, id := range ids {
			r.notify.counts(id)
			released[id] = struct{}{}
		}
		if !more {
			break
		}
	}
	release = time.Since(releaseStart)
	if r.cfg.BrokenLinkEntries > 0 {
		if err := r.pauseBrokenLinks(ctx, released, turn); err != nil {
			errs = append(errs, fmt.Errorf("broken-link detection: %w", err))
		}
	}
	if ids, err := r.db.Maintenance.CompleteFullCampaigns(ctx, nil); err != nil {
		errs = append(errs, fmt.Errorf("completing full campaigns: %w", err))
	} else {
		for _, id := range ids {
			r.log.Info("campaign complete: every quota is full", zap.Int64("campaign", id))
		}
	}
	if time.Since(time.Unix(0, r.partitionsAt.Load())) >= r.cfg.PartitionEvery {
		if made, err := r.db.Maintenance.EnsureSessionPartitions(ctx, r.cfg.Partitions); err != nil {
			errs = append(errs, fmt.Errorf("creating partitions of sessions: %w", err))
		} else {
			r.partitionsAt.Store(time.Now().UnixNano())
			if len(made) > 0 {
				r.log.Info("partitions of sessions created ahead of the id sequence", zap.Strings("partitions", made))
			}
		}
	}
	if r.cfg.OutboxRetention > 0 {
		var purged int64
		for range 100 { // at most 100 batches a sweep; the next sweep goes on
			n, err := r.db.Maintenance.PurgeDeliveredOutbox(ctx, r.cfg.OutboxRetention, outboxPurgeBatch)
			purged += n
			if err != nil {
				errs = append(errs, fmt.Errorf("purging delivered postbacks: %w", err))
				break
			}
			if n < outboxPurgeBatch {
				break
			}
		}
		if purged > 0 {
			r.log.Debug("delivered postbacks purged", zap.Int64("rows", purged), zap.Duration("older_than", r.cfg.OutboxRetention))
		}
	}
	if ids, err := r.db.Maintenance.ArchiveStaleCampaigns(ctx, r.cfg.ArchiveAfter); err != nil {
		errs = append(errs, fmt.Errorf("archiving finished campaigns: %w", err))
	} else {
		for _, id := range ids {
			r.log.Info("campaign archived: complete or reconciled long enough",
				zap.Int64("campaign", id), zap.Duration("after", r.cfg.ArchiveAfter))
		}
	}
	return errors.Join(errs...)
}
