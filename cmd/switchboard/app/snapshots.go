package app

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/snapshot"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply"
)

// A process starts from a snapshot (engine/snapshot) rather than reading the whole market
// from PostgreSQL when it has one: streamed by a running peer (Config.SnapshotPeer, GET
// /admin/snapshot on the peer's admin listener) or left on local disk by this machine's
// last process (Config.SnapshotDir, written periodically and at graceful shutdown). It then
// reads from PostgreSQL only what changed since the snapshot's position, and is ready once
// caught up. A snapshot that is refused (corrupt, truncated, of another schema, older than
// Config.SnapshotMaxAge, a peer that fails mid-stream) is logged and dropped whole, and the
// process loads from the database as without one.

// Snapshot defaults.
const (
	DefaultSnapshotEvery  = 10 * time.Minute
	DefaultSnapshotMaxAge = time.Hour
)

// snapshotLag is how long before a snapshot's write its position was read: every change
// committed before the position has reached this process's memory by then (NOTIFY, the
// mirrors' debounce and reload take well under a second), so that the snapshot holds at
// least what the position promises. Tests shorten it (nanoseconds).
var snapshotLagNanos atomic.Int64

func init() { snapshotLagNanos.Store(int64(10 * time.Second)) }

func snapshotLag() time.Duration { return time.Duration(snapshotLagNanos.Load()) }

// positionEvery is how often a process reads the database position (snapshotLag/4).
func positionEvery() time.Duration { return max(snapshotLag()/4, 10*time.Millisecond) }

// snapshotKeyName is the service key (persistence.ServiceKey) peers authenticate snapshot
// requests with: every process of a deployment reads the same bytes from the database.
const snapshotKeyName = "snapshot_peer"

// positions are the database positions this process read lately, with when it read them.
type positions struct {
	mu   sync.Mutex
	seen []seenPosition // oldest first
}

type seenPosition struct {
	read time.Time
	pos  persistence.ChangePosition
}

// add records a position read at `read`, keeping the newest at or before read − 2·lag and
// those after.
func (p *positions) add(read time.Time, pos persistence.ChangePosition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, seenPosition{read, pos})
	keep := 0
	for i, s := range p.seen {
		if !s.read.After(read.Add(-2 * snapshotLag())) {
			keep = i
		}
	}
	p.seen = p.seen[keep:]
}

// before returns the newest position read at or before t.
func (p *positions) before(t time.Time) (persistence.ChangePosition, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.seen) - 1; i >= 0; i-- {
		if !p.seen[i].read.After(t) {
			return p.seen[i].pos, true
		}
	}
	return persistence.ChangePosition{}, false
}

// trackPositions reads the database position every positionEvery until ctx ends.
func (a *App) trackPositions(ctx context.Context) {
	t := time.NewTicker(positionEvery())
	defer t.Stop()
	for {
		read := time.Now()
		if pos, err := a.DB.Feed.ChangePosition(ctx); err == nil {
			a.positions.add(read, pos)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errNoSnapshot: this process has no snapshot to give yet (not loaded, or no position read
// long enough ago).
var errNoSnapshot = errors.New("no snapshot yet: the process is loading or has just started")

// snapshotHeader is the header of a snapshot of this process's memory now.
func (a *App) snapshotHeader() (snapshot.Header, error) {
	select {
	case <-a.ready:
	default:
		return snapshot.Header{}, errNoSnapshot
	}
	now := time.Now()
	pos, ok := a.positions.before(now.Add(-snapshotLag()))
	if !ok || pos.At.IsZero() {
		return snapshot.Header{}, errNoSnapshot
	}
	return snapshot.Header{Schema: a.schema, Written: now,
		Position: snapshot.Position{XID: pos.XID, SessionID: pos.SessionID, At: pos.At}}, nil
}

// streamDuty is the share of wall-clock time a snapshot written while the process serves (to
// a peer, or the periodic local one) works: the rest of the core it takes is left to this
// process's requests. The one written at shutdown is not paced.
const streamDuty = 0.5

// pace sleeps after every paceEvery values so that the work since the last sleep is duty of
// the time; duty 1: no sleep.
type pace struct {
	duty  float64
	n     int
	since time.Time
	sleep func(time.Duration) // nil: time.Sleep
	slept time.Duration       // the sleeps so far
}

const paceEvery = 4096

func (p *pace) step() {
	if p.duty >= 1 {
		return
	}
	if p.n++; p.n < paceEvery {
		return
	}
	p.n = 0
	if !p.since.IsZero() {
		rest := time.Duration(float64(time.Since(p.since)) * (1 - p.duty) / p.duty)
		p.slept += rest
		if p.sleep != nil {
			p.sleep(rest)
		} else {
			time.Sleep(rest)
		}
	}
	p.since = time.Now()
}

// writeSnapshot writes this process's engine input, panel and left-out history campaigns,
// working duty of the time (1: unpaced).
func (a *App) writeSnapshot(w *snapshot.Writer, duty float64) error {
	var err error
	p := pace{duty: duty, since: time.Now()}
	a.Engine.Snapshot().RangeCampaigns(func(c *engine.Campaign) bool {
		err = w.Campaign(c)
		p.step()
		return err == nil
	})
	if err != nil {
		return err
	}
	a.Panel.RangeRecords(func(rec *engine.PanelRecord) bool {
		err = w.Participant(rec)
		p.step()
		return err == nil
	})
	if err != nil {
		return err
	}
	for _, id := range a.Supply.LeftOut() {
		if err := w.LeftOut(id); err != nil {
			return err
		}
	}
	return a.writeCounters(w, &p)
}

// writeCounters writes the counters of every quota and campaign of the engine input, then
// the blocked set. They are at least as new as the snapshot's position (written snapshotLag
// after it: NOTIFY has brought every change committed before it), and the catch-up re-reads
// those changed at or after it.
func (a *App) writeCounters(w *snapshot.Writer, p *pace) error {
	var err error
	c, snap := a.Engine.Counters(), a.Engine.Snapshot()
	snap.RangeCampaigns(func(k *engine.Campaign) bool {
		for _, q := range k.Quotas {
			if err = w.QuotaCount(q.ID, c.Quota(q.ID)); err != nil {
				return false
			}
		}
		p.step()
		return true
	})
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	snap.RangeCampaigns(func(k *engine.Campaign) bool {
		err = w.CampaignCount(k.ID, c.Campaign(k.ID, now))
		p.step()
		return err == nil
	})
	if err != nil {
		return err
	}
	for _, b := range a.Quality.Blocks() {
		if err := w.Block(snapshot.Block{ParticipantID: b.ParticipantID, PublisherID: b.PublisherID, User: b.User,
			Class: b.RuleClass, BlockedAt: b.BlockedAt.Unix(), Until: b.Until().Unix()}); err != nil {
			return err
		}
	}
	return nil
}

// saveSnapshot writes the local snapshot (Config.SnapshotDir), working duty of the time.
func (a *App) saveSnapshot(duty float64) error {
	h, err := a.snapshotHeader()
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := snapshot.WriteFile(a.cfg.SnapshotDir, h, func(w *snapshot.Writer) error { return a.writeSnapshot(w, duty) })
	if err != nil {
		return err
	}
	a.log.Info("snapshot written", zap.String("dir", a.cfg.SnapshotDir), zap.Int64("campaigns", n.Campaigns),
		zap.Int64("participants", n.Participants), zap.Duration("took", time.Since(start)))
	return nil
}

// runSnapshots writes the local snapshot every Config.SnapshotEvery once the loads are in.
func (a *App) runSnapshots(ctx context.Context) {
	select {
	case <-a.ready:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(a.cfg.SnapshotEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.saveSnapshot(streamDuty); err != nil && !errors.Is(err, errNoSnapshot) {
				a.log.Warn("snapshot not written", zap.Error(err))
			}
		}
	}
}

// snapshotToken is what a peer sends to be given a snapshot: a MAC of the deployment's
// snapshot service key, so that the key itself never crosses the network.
func snapshotToken(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("switchboard snapshot peer"))
	return hex.EncodeToString(m.Sum(nil))
}

// snapshotLimit allows a peer snapshot every few seconds with a small burst: each streams
// the whole panel and takes a core for seconds.
func newSnapshotLimit() *httpio.RateLimiter { return httpio.NewRateLimiter(0.2, 3) }

// serveSnapshot answers GET /admin/snapshot on the admin listener: the current snapshot,
// streamed, to a peer that shows the deployment's snapshot token; one stream at a time.
func (a *App) serveSnapshot(ctx *fasthttp.RequestCtx) {
	want := a.snapshotAuth.Load()
	if want == nil { // read once: the key is created on first use and never changes
		dctx, cancel := httpio.DBContext(0)
		key, err := a.DB.Accounts.ServiceKey(dctx, snapshotKeyName)
		cancel()
		if err != nil {
			a.log.Warn("snapshot key not read", zap.Error(err))
			ctx.Error("unavailable", fasthttp.StatusServiceUnavailable)
			return
		}
		t := snapshotToken(key)
		want = &t
		a.snapshotAuth.Store(want)
	}
	got, ok := strings.CutPrefix(string(ctx.Request.Header.Peek("Authorization")), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(*want)) != 1 {
		ctx.Error("unauthorized", fasthttp.StatusUnauthorized)
		return
	}
	if ok, wait := a.snapshotLimit.Allow([32]byte{}, time.Now()); !ok {
		ctx.Response.Header.Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		ctx.Error("too many snapshot requests", fasthttp.StatusTooManyRequests)
		return
	}
	h, err := a.snapshotHeader()
	if err != nil {
		ctx.Response.Header.Set("Retry-After", "5")
		ctx.Error(err.Error(), fasthttp.StatusServiceUnavailable)
		return
	}
	if !a.snapshotStreams.TryLock() {
		ctx.Response.Header.Set("Retry-After", "5")
		ctx.Error("a snapshot is being streamed", fasthttp.StatusTooManyRequests)
		return
	}
	ctx.SetContentType("application/octet-stream")
	log := a.log
	ctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer a.snapshotStreams.Unlock()
		start := time.Now()
		w, err := snapshot.NewWriter(bw, h)
		if err == nil {
			err = a.writeSnapshot(w, streamDuty)
		}
		if err == nil {
			err = w.Close()
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			log.Warn("snapshot stream ended early", zap.Error(err)) // the peer refuses it (no end frame)
			return
		}
		log.Info("snapshot streamed to a peer", zap.Int64("participants", w.Counts().Participants),
			zap.Duration("took", time.Since(start)))
	})
}

// snapshotJoinShare is the least share of wall-clock time the loads of a process joining
// serving ones work when it starts from a snapshot: reading the snapshot into its panel, its
// engine's build, the counters and the catch-up, seconds of one core at a million
// participants, which a tenth would stretch past the start's target (docs/operations.md).
const snapshotJoinShare = 0.5

// restored is what a process starts from when a snapshot was accepted.
type restored struct {
	panel  *engine.Panel
	engine *engineSeed
	supply *supply.PanelSeed
	// counted: the snapshot carried the counters (format 2), set in the engine already, and
	// blocks the blocked set; both caught up from xid (seedLoads).
	counted bool
	blocks  []persistence.QualityBlock
	xid     uint64
}

// seedLoads has the counters' and the blocked set's first loads read only what changed
// since the snapshot's position, when it carried them (else they load from the database).
// Call it before the router and the quality service start.
func (a *App) seedLoads(res *restored) {
	if res == nil || !res.counted {
		return
	}
	a.Router.SeedCounts(res.xid)
	a.Quality.Restore(res.blocks, res.xid)
}

// errTooOld refuses a snapshot older than Config.SnapshotMaxAge.
var errTooOld = errors.New("snapshot older than the maximum age")

// restore loads the first snapshot accepted of the peer's (Config.SnapshotPeer) and the local
// one (Config.SnapshotDir), or returns nil: the process then loads from the database.
func (a *App) restore(ctx context.Context) *restored {
	type source struct {
		name string
		open func() (io.ReadCloser, error)
	}
	var sources []source
	if a.cfg.SnapshotPeer != "" {
		sources = append(sources, source{"peer " + a.cfg.SnapshotPeer, func() (io.ReadCloser, error) { return a.fetchPeer(ctx) }})
	}
	if a.cfg.SnapshotDir != "" {
		sources = append(sources, source{"local " + a.cfg.SnapshotDir, func() (io.ReadCloser, error) {
			f, err := snapshot.Open(a.cfg.SnapshotDir)
			return f, err
		}})
	}
	for _, src := range sources {
		start := time.Now()
		r, err := src.open()
		if errors.Is(err, os.ErrNotExist) {
			a.log.Info("no local snapshot; loading from the database", zap.String("source", src.name))
			continue
		}
		var res *restored
		var counts snapshot.Counts
		var h snapshot.Header
		if err == nil {
			res, h, counts, err = a.readSnapshot(ctx, r)
			r.Close()
		}
		if err != nil {
			a.log.Warn("snapshot refused; loading from the database", zap.String("source", src.name), zap.Error(err))
			continue
		}
		a.log.Info("started from a snapshot; catching up from the database", zap.String("source", src.name),
			zap.Int64("campaigns", counts.Campaigns), zap.Int64("participants", counts.Participants),
			zap.Duration("age", time.Since(h.Written).Round(time.Millisecond)), zap.Duration("took", time.Since(start)))
		return res
	}
	return nil
}

// readSnapshot reads a snapshot into a new panel and campaign list.
func (a *App) readSnapshot(ctx context.Context, r io.Reader) (*restored, snapshot.Header, snapshot.Counts, error) {
	pl := engine.NewPanel()
	reservePanel(ctx, a.DB, pl, a.log)
	var campaigns []engine.Campaign
	var leftOut []int64
	type quotaCount struct {
		id int64
		v  engine.QuotaCounts
	}
	type campaignCount struct {
		id int64
		v  engine.CampaignCounts
	}
	var quotas []quotaCount
	var counts []campaignCount
	var blocks []persistence.QualityBlock
	accept := func(h snapshot.Header) error {
		if h.Schema != a.schema {
			return &snapshot.VersionError{What: "schema", Got: h.Schema, Want: a.schema}
		}
		if age := time.Since(h.Written); age > a.cfg.SnapshotMaxAge {
			return fmt.Errorf("%w (%s, at most %s)", errTooOld, age.Round(time.Second), a.cfg.SnapshotMaxAge)
		}
		return nil
	}
	p := pace{duty: 1, since: time.Now()}
	if a.Joining { // beside serving processes: their cores too
		p.duty = max(a.cfg.JoinLoadShare, snapshotJoinShare)
	}
	began, tr := time.Now(), &timedReader{r: r}
	h, got, err := snapshot.Read(tr, accept, snapshot.Sink{
		Campaign: func(c engine.Campaign) error { campaigns = append(campaigns, c); return nil },
		Participant: func(rec *engine.PanelRecord) error {
			p.step()
			return pl.Restore(rec)
		},
		LeftOut: func(id int64) error { leftOut = append(leftOut, id); return nil },
		QuotaCount: func(id int64, v engine.QuotaCounts) error {
			quotas = append(quotas, quotaCount{id, v})
			return nil
		},
		CampaignCount: func(id int64, v engine.CampaignCounts) error {
			counts = append(counts, campaignCount{id, v})
			return nil
		},
		Block: func(b snapshot.Block) error {
			blocks = append(blocks, persistence.QualityBlock{ParticipantID: b.ParticipantID, PublisherID: b.PublisherID,
				User: b.User, RuleClass: b.Class, BlockedAt: time.Unix(b.BlockedAt, 0), ExpiresAt: time.Unix(b.Until, 0)})
			return nil
		},
	})
	if err != nil {
		return nil, h, got, err
	}
	// The fetch is the time spent waiting on the source; the decode the rest but the pacing's
	// sleeps (a joining process's share of the clock).
	a.phases.done("fetch", tr.wait, tr.bytes, 0)
	a.phases.done("decode", time.Since(began)-tr.wait-p.slept, 0, got.Campaigns+got.Participants,
		zap.Duration("paced", p.slept.Round(time.Millisecond)), zap.Int64("quota_counts", got.QuotaCounts),
		zap.Int64("campaign_counts", got.CampaignCounts), zap.Int64("blocks", got.Blocks), zap.Int("format", h.Format))
	pos := h.Position
	res := &restored{panel: pl, engine: &engineSeed{campaigns: campaigns, xid: pos.XID},
		supply: &supply.PanelSeed{XID: pos.XID, SessionID: pos.SessionID, LeftOut: leftOut}, xid: pos.XID}
	if h.Format >= 2 { // format 1 carries no counters: they load from the database
		c := a.Engine.Counters()
		for _, q := range quotas {
			c.SetQuota(q.id, q.v)
		}
		for _, k := range counts {
			c.SetCampaign(k.id, k.v)
		}
		res.counted, res.blocks = true, blocks
	}
	return res, h, got, nil
}

// peerClient fetches peer snapshots: no overall timeout (a snapshot of millions takes
// seconds), but a bounded wait for the answer's headers and for each read.
var peerClient = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 30 * time.Second,
	IdleConnTimeout: time.Second}}

// fetchPeer asks Config.SnapshotPeer for its snapshot.
func (a *App) fetchPeer(ctx context.Context) (io.ReadCloser, error) {
	key, err := a.DB.Accounts.ServiceKey(ctx, snapshotKeyName)
	if err != nil {
		return nil, err
	}
	url := a.cfg.SnapshotPeer
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/")+"/admin/snapshot", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+snapshotToken(key))
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		resp.Body.Close()
		return nil, fmt.Errorf("peer answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Body, nil
}
