package router

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// The counts mirror is the receiving side of what the notifier (notifier.go) sends: it keeps
// this process's engine counters equal to the database and records the entries other
// processes admit in its panel. Both sides live here, beside the entry and callback paths
// that move the counters, so that the channels' payloads are written and read in one place
// and the process's own entries (its origin) are told apart.

// feedStore is what the counts mirror and the notifier use of the database's change feed.
type feedStore interface {
	countsAnnouncer
	countsSource
}

// countsSource is what the counts mirror reads: the counts themselves, and the
// notifications of other processes.
type countsSource interface {
	CountsAfter(ctx context.Context, after int64, limit int, rows *persistence.CountRows) (int64, error)
	CountsOf(ctx context.Context, whole, quotasOnly []int64, rows *persistence.CountRows) error
	CountsChangedAt(ctx context.Context, xid uint64) (daily, quotas []int64, err error)
	CampaignsChangedAt(ctx context.Context, xid uint64) ([]int64, error)
	ListenOn(ctx context.Context, channel string) (*persistence.Listener, error)
}

// countsMirror keeps the engine's counters and the panel's entries equal to the fleet's.
type countsMirror struct {
	db     countsSource
	eng    *engine.Engine
	panel  *engine.Panel
	origin string // this process's name on EntriesChannel: its own entries are not recorded twice
	log    *zap.Logger

	notifyEvery, reconcileEvery time.Duration
	reconcileSlice              int

	// loaded is closed after the first reconciliation of every active campaign's counters
	// (Router.CountsLoaded); loadedOnce closes it.
	loaded     chan struct{}
	loadedOnce sync.Once
	// heard is closed once the LISTEN on other processes' entries is up
	// (Router.EntriesHeard); heardOnce closes it.
	heard     chan struct{}
	heardOnce sync.Once

	// rows is what the mirror reads counts into (listenCounts: its loop is the only reader),
	// reused from one read to the next, as are the campaign lists of its reads
	// (reconcileCounts).
	rows          persistence.CountRows
	whole, quotas []int64

	// seeded: the counters were set from a process snapshot consistent at the position
	// seedXID (Router.SeedCounts), and the first full load reads only what changed since.
	seeded  bool
	seedXID uint64
}

func newCountsMirror(db countsSource, eng *engine.Engine, panel *engine.Panel, origin string, cfg Config, log *zap.Logger) *countsMirror {
	return &countsMirror{db: db, eng: eng, panel: panel, origin: origin, log: log,
		notifyEvery: cfg.NotifyEvery, reconcileEvery: cfg.ReconcileEvery, reconcileSlice: cfg.ReconcileSlice,
		loaded: make(chan struct{}), heard: make(chan struct{})}
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
func (m *countsMirror) listenCounts(ctx context.Context) {
	var after int64 // the last campaign id the safety walk re-read (0: start over)
	full := func(ctx context.Context) error {
		if m.seeded {
			if err := m.catchUp(ctx); err != nil {
				return err
			}
			m.seeded = false
			m.loadedOnce.Do(func() { close(m.loaded) })
			return nil
		}
		for from := int64(0); ; {
			last, err := m.countsAfter(ctx, from, countsLoadSlice)
			if err != nil {
				return err
			}
			if last == 0 {
				break
			}
			from = last
		}
		m.loadedOnce.Do(func() { close(m.loaded) })
		return nil
	}
	safety := func(ctx context.Context) error {
		last, err := m.countsAfter(ctx, after, m.reconcileSlice)
		if err != nil {
			return err
		}
		after = last
		return nil
	}
	mirror.Run(ctx, mirror.Config[countsChange]{
		Name:   "counters",
		Log:    m.log,
		Listen: mirror.Listener(m.db.ListenOn, persistence.CountsChannel),
		Notified: func(payload string, add func(countsChange)) {
			persistence.ParseCounts(payload, func(id int64, quotasOnly bool) { add(countsChange{id, quotasOnly}) })
		},
		Debounce: m.notifyEvery, // let a burst of notifications gather
		Reload:   m.reconcileCounts,
		Full:     full,
		Every:    m.reconcileEvery,
		Safety:   safety,
	})
}

// catchUp sets the counters changed since the seed's position to the database's values:
// the campaign counts (whole) of the campaigns of which a day's counts or the campaign
// itself changed (a campaign activated since has no counter in the snapshot), the quota
// counts of those of which a quota's changed, countsLoadSlice campaigns a read. It runs once
// the LISTEN is up: a change committed after the read is notified.
func (m *countsMirror) catchUp(ctx context.Context) error {
	daily, quotas, err := m.db.CountsChangedAt(ctx, m.seedXID)
	if err != nil {
		return err
	}
	changed, err := m.db.CampaignsChangedAt(ctx, m.seedXID)
	if err != nil {
		return err
	}
	whole := append(daily, changed...)
	for len(whole)+len(quotas) > 0 {
		w, q := whole[:min(len(whole), countsLoadSlice)], quotas[:min(len(quotas), countsLoadSlice)]
		whole, quotas = whole[len(w):], quotas[len(q):]
		if err := m.db.CountsOf(ctx, w, q, &m.rows); err != nil {
			return err
		}
		m.setCounts(&m.rows)
	}
	return nil
}

// countsAfter sets the counters of at most limit active campaigns above id after to the
// database's values, and returns the last id read (0: none left), as CountsAfter.
func (m *countsMirror) countsAfter(ctx context.Context, after int64, limit int) (int64, error) {
	last, err := m.db.CountsAfter(ctx, after, limit, &m.rows)
	if err == nil {
		m.setCounts(&m.rows)
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
func (m *countsMirror) reconcileCounts(ctx context.Context, changes []countsChange) error {
	whole, quotas := m.whole[:0], m.quotas[:0]
	for _, c := range changes {
		if c.quotasOnly {
			quotas = append(quotas, c.campaignID)
		} else {
			whole = append(whole, c.campaignID)
		}
	}
	m.whole, m.quotas = whole, quotas
	if err := m.db.CountsOf(ctx, whole, quotas, &m.rows); err != nil {
		return err
	}
	m.setCounts(&m.rows)
	return nil
}

// setCounts sets the engine's counters to counts read from the database.
func (m *countsMirror) setCounts(rows *persistence.CountRows) {
	c := m.eng.Counters()
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
func (m *countsMirror) listenEntries(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[struct{}]{Name: "entries", Log: m.log,
		Listen:   mirror.Listener(m.db.ListenOn, persistence.EntriesChannel),
		Notified: func(payload string, _ func(struct{})) { m.recordEntries(payload) },
		// Runs once the LISTEN is up: every entry committed from then on is heard.
		Full: func(context.Context) error {
			m.heardOnce.Do(func() { close(m.heard) })
			return nil
		}})
}

// recordEntries records the entries of one EntriesChannel notification.
func (m *countsMirror) recordEntries(payload string) {
	origin, items, ok := strings.Cut(payload, "|")
	if !ok || origin == m.origin {
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
			m.panel.RecordEntry(pid, cid, at)
		}
	}
}
