package supply

import (
	"context"
	"hash/maphash"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

// QualityConfig tunes the participant quality defenses (docs/quality.md); zero values take
// the defaults.
type QualityConfig struct {
	// Policy decides blocks from signals (thresholds per rule class, block length).
	Policy quality.Policy
	// AllowPrivateIPs accepts private, loopback, link-local, shared and documentation
	// addresses as user_ip (for testing); unspecified, multicast and reserved ones are
	// refused anyway.
	AllowPrivateIPs bool
	// GeoIPDB is the path of a MaxMind-format country database (GeoIP2/GeoLite2 Country or
	// anything with country.iso_code). Empty: the IP-country check is off.
	GeoIPDB string
	// DuplicateDeviceUsers: a device seen with more user identifiers of one publisher than
	// this within 24 hours is a duplicate signal for each of them (default 3).
	DuplicateDeviceUsers int
	// FlushEvery is the period at which device sightings are written and checked (default
	// 200 ms: a batch of a second at 26,000 offers/s was 100-180 ms of one PostgreSQL core at
	// once, and the offers that met it made the open-loop tail).
	FlushEvery time.Duration
	// ReloadEvery is the period of the full reload of the blocked set, the safety net under
	// NOTIFY (default 1 min).
	ReloadEvery time.Duration
}

func (c QualityConfig) withDefaults() QualityConfig {
	c.Policy = c.Policy.WithDefaults()
	if c.DuplicateDeviceUsers <= 0 {
		c.DuplicateDeviceUsers = 3
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = 200 * time.Millisecond
	}
	if c.ReloadEvery <= 0 {
		c.ReloadEvery = time.Minute
	}
	return c
}

// Quality is one process's view of participant quality: the blocked set that GET /campaigns
// and entry read from memory (blockset.go, a mirror), the IP checks, the device-sighting
// collector and the counters behind /metrics. The policy is internal/quality's; decisions
// are made in PostgreSQL (persistence/quality.go) and reach every process through NOTIFY on
// persistence.QualityChannel.
type Quality struct {
	cfg QualityConfig
	db  *persistence.DB
	log *zap.Logger
	now func() int64

	blocks  atomic.Pointer[blockSet]
	blockMu sync.Mutex // serializes writers of blocks

	geo        *geoDB           // nil: the IP-country check is off
	countryISO map[int32]string // country id → ISO code, for the IP-country check

	seed      maphash.Seed
	sightings [sightShards]sightShard
	// flush is the flush's own copy of the shards' queues, kept between flushes so that
	// writing them allocates no new buffers once grown; its mutex serializes flushes.
	flush struct {
		mu     sync.Mutex
		text   []byte
		queued []sighting
		rows   []persistence.DeviceSighting
	}

	stats sync.Map // publisher id → *publisherStats

	blockedBodies map[string][]byte // the GET /campaigns answer of a blocked participant, per rule class
}

// publisherStats are the counters of one publisher.
type publisherStats struct {
	blocks, speeders, duplicates, ipMismatches atomic.Int64
}

// newQuality prepares the quality state: the geo database when configured, the country codes,
// the precomputed answers. The blocked set is loaded by run (and LoadBlocks).
func newQuality(cfg QualityConfig, db *persistence.DB, log *zap.Logger, now func() int64, countries []persistence.Country) (*Quality, error) {
	q := &Quality{cfg: cfg.withDefaults(), db: db, log: log, now: now, seed: maphash.MakeSeed(),
		countryISO: map[int32]string{}, blockedBodies: map[string][]byte{}}
	q.blocks.Store(emptyBlocks)
	for i := range q.sightings {
		q.sightings[i].seen = make([]uint64, maxSeen/sightShards)
	}
	for _, c := range countries {
		q.countryISO[c.ID] = c.ISOCode
	}
	for _, class := range quality.Classes {
		q.blockedBodies[class] = []byte(`{"surveys":[],"player_eligibility":{"is_eligible":false,"reason":1,"comment":` +
			strconv.Quote("blocked for quality: "+classComment(class)) + `}}`)
	}
	if q.cfg.GeoIPDB != "" {
		g, err := openGeoDB(q.cfg.GeoIPDB)
		if err != nil {
			return nil, err
		}
		q.geo = g
	}
	return q, nil
}

// classComment names a rule class to the partner; thresholds are never shown.
func classComment(class string) string {
	switch class {
	case quality.ClassOutcomes:
		return "repeated quality terminations or rejected completes"
	case quality.ClassSpeeding:
		return "repeated speeding"
	case quality.ClassDuplicates:
		return "duplicate identity"
	case quality.ClassImplausible:
		return "implausible profile changes"
	}
	return "quality rules"
}

// --- IP checks ---

var (
	errPrivateIP = fault.BadRequest("user_ip must be a public IP address (private, loopback, link-local, multicast, " +
		"reserved and unspecified addresses are refused)")
	// reservedAlways are refused even with AllowPrivateIPs.
	reservedAlways = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("240.0.0.0/4"), // reserved, and 255.255.255.255
		netip.MustParsePrefix("100::/64"),    // discard-only
	}
	// reservedUnlessAllowed are not globally reachable: refused unless AllowPrivateIPs.
	reservedUnlessAllowed = []netip.Prefix{
		netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT)
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("3fff::/20"),       // documentation
		netip.MustParsePrefix("2001:2::/48"),     // benchmarking
		netip.MustParsePrefix("5f00::/16"),       // segment routing
	}
)

// publicIP reports whether ip may be a participant's address: a public unicast address, or
// with allowPrivate also a private, loopback, link-local, shared or documentation one.
func publicIP(ip netip.Addr, allowPrivate bool) bool {
	if ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return publicIPv4(ip.As4(), allowPrivate)
	}
	return publicByRules(ip, allowPrivate)
}

// publicByRules is publicIP by the address ranges' rules, for any address: IPv6's answer,
// and the reference that publicIPv4's first-octet answer is tested against.
func publicByRules(ip netip.Addr, allowPrivate bool) bool {
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() {
		return false
	}
	for _, p := range reservedAlways {
		if p.Contains(ip) {
			return false
		}
	}
	if allowPrivate {
		return true
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range reservedUnlessAllowed {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// publicIPv4 is publicIP for IPv4, by first octet (the hot path's common case).
func publicIPv4(a [4]byte, allowPrivate bool) bool {
	switch {
	case a[0] == 0 || a[0] >= 224: // "this network", multicast, reserved, broadcast
		return false
	case allowPrivate:
		return true
	case a[0] == 10 || a[0] == 127: // private, loopback
		return false
	case a[0] == 100:
		return a[1]&0xc0 != 64 // 100.64.0.0/10 shared
	case a[0] == 169:
		return a[1] != 254 // link-local
	case a[0] == 172:
		return a[1]&0xf0 != 16 // 172.16.0.0/12 private
	case a[0] == 192:
		return !(a[1] == 168 || a[1] == 0 && (a[2] == 0 || a[2] == 2)) // private, IETF, documentation
	case a[0] == 198:
		return !(a[1]&0xfe == 18 || a[1] == 51 && a[2] == 100) // benchmarking, documentation
	case a[0] == 203:
		return !(a[1] == 0 && a[2] == 113) // documentation
	}
	return true
}

// checkIP validates a parsed user_ip.
func (q *Quality) checkIP(ip netip.Addr) error {
	if q == nil || publicIP(ip, q.cfg.AllowPrivateIPs) {
		return nil
	}
	return errPrivateIP
}

// GeoIPStatus is the /readyz entry of the IP-country check: "ok" with a database, else "off".
func (q *Quality) GeoIPStatus() string {
	if q == nil || q.geo == nil {
		return "off"
	}
	return "ok"
}

// --- the hot path ---

// refusal returns the answer of GET /campaigns for a participant who may not get offers
// (blocked: reason 1; IP in another country: reason 3), or nil. It reads memory only.
func (q *Quality) refusal(pub int64, user []byte, p *engine.Participant, ip netip.Addr, now int64) []byte {
	if q == nil {
		return nil
	}
	if set := q.blocks.Load(); len(set.byID) > 0 {
		var e *blockEntry
		if p != nil {
			e = set.byID[p.ID]
		} else {
			e = set.byUser[userKey{pub, bytesString(user)}]
		}
		if e != nil && now < e.until {
			return q.blockedBodies[e.class]
		}
	}
	if q.geo != nil && p != nil {
		if want := q.countryISO[p.CountryID]; want != "" {
			if got, ok := q.geo.country(ip); ok && got != want {
				q.statsOf(pub).ipMismatches.Add(1)
				return ipMismatchBody
			}
		}
	}
	return nil
}

var ipMismatchBody = []byte(`{"surveys":[],"player_eligibility":{"is_eligible":false,"reason":3,"comment":"country not served: the IP address is in another country"}}`)

// EntryBlocked reports whether an offer token issued at issuedAt (unix seconds) may not be
// used at now: its participant is blocked, or was blocked after the token was issued.
func (q *Quality) EntryBlocked(participantID, issuedAt, now int64) bool {
	if q == nil {
		return false
	}
	set := q.blocks.Load()
	if len(set.byID) == 0 {
		return false
	}
	e := set.byID[participantID]
	return e != nil && (now < e.until || issuedAt <= e.blockedAt)
}

// Blocked reports whether the participant is blocked now, and for which rule class.
func (q *Quality) Blocked(participantID int64) (string, bool) {
	if q == nil {
		return "", false
	}
	e := q.blocks.Load().byID[participantID]
	if e == nil || q.now() >= e.until {
		return "", false
	}
	return e.class, true
}

// run keeps the blocked set equal to the database until ctx ends: LISTEN on QualityChannel
// (a full load after every connect), a periodic reload, and the device-sighting flush.
func (q *Quality) run(ctx context.Context) {
	go q.runFlush(ctx)
	go q.runPrune(ctx)
	q.mirrorBlocks(ctx)
}

// runPrune drops old quality history every hour.
func (q *Quality) runPrune(ctx context.Context) {
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			if err := q.db.PruneQualityHistory(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("quality history prune failed", zap.Error(err))
			}
		}
	}
}

// Record stores signals and decides blocks (persistence.RecordQualitySignals), applies the
// blocks here at once and counts them. Router and buyer operations call it.
func (q *Quality) Record(ctx context.Context, sigs []persistence.QualitySignal) error {
	if q == nil || len(sigs) == 0 {
		return nil
	}
	out, err := q.db.RecordQualitySignals(ctx, q.cfg.Policy, sigs)
	if err != nil {
		return err
	}
	q.Observe(out)
	return nil
}

// Observe counts what recording signals did and applies its blocks here.
func (q *Quality) Observe(out persistence.QualityOutcome) {
	if q == nil {
		return
	}
	for _, s := range out.NewSignals {
		if s.PublisherID == 0 {
			continue
		}
		switch quality.SignalClass(s.Kind) {
		case quality.ClassSpeeding:
			q.statsOf(s.PublisherID).speeders.Add(1)
		case quality.ClassDuplicates:
			q.statsOf(s.PublisherID).duplicates.Add(1)
		}
	}
	q.Apply(out.Blocks, true)
}

// Policy is the decision policy in force.
func (q *Quality) Policy() quality.Policy { return q.cfg.Policy }

// --- impanel: profile rules and sightings ---

// afterImpanel applies the profile rules to an impanel that was stored, and notes the
// device sighting. Failures are logged: the impanel itself has succeeded.
func (q *Quality) afterImpanel(pub int64, user, device []byte, participantID int64, countryID int32, answers []persistence.ProfileAnswer) {
	if q == nil {
		return
	}
	q.sight(pub, device, user, q.now())
	in := persistence.ImpanelQuality{ParticipantID: participantID, PublisherID: pub, CountryID: countryID}
	for _, a := range answers {
		if len(a.Codes) == 0 {
			continue
		}
		v := a.Codes[0]
		switch a.QuestionID {
		case engine.QuestionAge:
			in.Age = &v
		case engine.QuestionGender:
			in.Gender = &v
		}
	}
	ctx, cancel := httpio.DBContext(impanelTimeout)
	defer cancel()
	out, err := q.db.RecordImpanelQuality(ctx, q.cfg.Policy, in)
	if err != nil {
		q.log.Warn("impanel quality rules failed", zap.Int64("participant", participantID), zap.Error(err))
		return
	}
	q.Observe(out)
}

// --- device sightings ---

const (
	sightShards  = 32
	sightRefresh = 3600 // seconds: a known sighting is written again at most this often
	maxPending   = 100_000
	// maxSeen is the slots of the sightings remembered, 8 bytes each (8 MiB in all), made at
	// start so that a process's memory does not grow with its traffic. Half a million
	// distinct sightings an hour on one process, a large marketplace's, fill half of them,
	// and about one in a thousand gives way early; past that the oldest remembered give way,
	// and their next repeats are written again (the write is an upsert). A map that stopped
	// remembering at its bound left, at 1M participants, about half the identities' repeats
	// upserts, and the table's autovacuum a burst of PostgreSQL's CPU beside the offers.
	maxSeen = 1 << 20
	// sightWays is the slots of a bucket of the table (two cache lines): a sighting can take
	// any of them, so a bucket overflows only when far more than its share fall in it.
	sightWays = 16
)

type sightShard struct {
	mu sync.Mutex
	// seen remembers the sightings queued within the last sightRefresh, which alone spare a
	// write: buckets of sightWays slots, each fingerprint<<32 | unix second (0: empty), a
	// sighting's bucket chosen by the low bits of its identityHash of (publisher, device,
	// user) and its fingerprint the high ones. (A fingerprint met by another sighting of
	// its bucket spares that one a write, about once in 2^27 lookups.)
	seen    []uint64
	pending []sighting
	// text holds the devices and users of pending back to back: queueing a sighting copies
	// its two identifiers into memory the shard reuses after every flush instead of
	// allocating two strings, which at a large market's rate of new devices was most of
	// what GET /campaigns allocated, and so what paced the collector.
	text []byte
}

// lookup returns the slot of sighting k in its bucket (or, when the bucket does not hold
// it, the slot it would take: an empty one, else the one remembered longest ago) and
// whether k was queued within sightRefresh of now. The caller holds the lock.
func (sh *sightShard) lookup(k uint64, now int64) (slot int, recent bool) {
	base := int(k%uint64(len(sh.seen)/sightWays)) * sightWays
	fp := k>>32 | 1
	slot = base
	for i, v := range sh.seen[base : base+sightWays] {
		if v>>32 == fp {
			return base + i, now-int64(uint32(v)) < sightRefresh
		}
		if uint32(v) < uint32(sh.seen[slot]) {
			slot = base + i
		}
	}
	return slot, false
}

// remember notes in slot that sighting k was queued at now. The caller holds the lock.
func (sh *sightShard) remember(slot int, k uint64, now int64) {
	sh.seen[slot] = (k>>32|1)<<32 | uint64(uint32(now))
}

// sighting is one queued device sighting; its device and user are text[off:off+dev] and
// text[off+dev:off+dev+user] of the buffer it is queued in.
type sighting struct {
	pub, at        int64
	off, dev, user uint32
}

// sight notes that device was used by user of publisher pub; it never blocks and, once the
// shard's buffers have grown, allocates nothing.
func (q *Quality) sight(pub int64, device, user []byte, now int64) {
	if q == nil || len(device) == 0 {
		return
	}
	sh := &q.sightings[maphash.Bytes(q.seed, device)%sightShards]
	k := identityHash(q.seed, pub, 0, device, user)
	sh.mu.Lock()
	slot, recent := sh.lookup(k, now)
	if recent || len(sh.pending) >= maxPending/sightShards {
		sh.mu.Unlock()
		return
	}
	sh.remember(slot, k, now)
	sh.pending = append(sh.pending, sighting{pub: pub, at: now, off: uint32(len(sh.text)), dev: uint32(len(device)), user: uint32(len(user))})
	sh.text = append(append(sh.text, device...), user...)
	sh.mu.Unlock()
}

func (q *Quality) runFlush(ctx context.Context) {
	t := time.NewTicker(q.cfg.FlushEvery)
	defer t.Stop()
	// While the database is away the flush backs off (sightings wait, up to their cap) and
	// its failure is logged once.
	outage := retry.NewOutage(q.log, "device sightings flush", retry.Default, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			outage.Attempt(ctx, q.FlushSightings)
		}
	}
}

// FlushSightings writes the queued device sightings and applies the shared-device rule to
// them (every FlushEvery by itself; tests call it to avoid waiting). Sightings that fail to
// be written are dropped.
func (q *Quality) FlushSightings(ctx context.Context) error {
	q.flush.mu.Lock()
	defer q.flush.mu.Unlock()
	rows := q.collectSightings()
	if len(rows) == 0 {
		return nil
	}
	_, out, err := q.db.RecordDeviceSightings(ctx, q.cfg.Policy, rows, q.cfg.DuplicateDeviceUsers)
	clear(rows) // drop the views of the flush's text
	if err != nil {
		return err
	}
	q.Observe(out)
	return nil
}

// collectSightings empties the shards' queues into the flush's buffers and returns them as
// rows whose identifiers view the flush's text: valid until the next collect, and not to be
// kept. The caller holds q.flush.mu.
func (q *Quality) collectSightings() []persistence.DeviceSighting {
	f := &q.flush
	f.text, f.queued = f.text[:0], f.queued[:0]
	for i := range q.sightings {
		sh := &q.sightings[i]
		sh.mu.Lock()
		base := uint32(len(f.text))
		f.text = append(f.text, sh.text...)
		for _, s := range sh.pending {
			s.off += base
			f.queued = append(f.queued, s)
		}
		sh.pending, sh.text = sh.pending[:0], sh.text[:0]
		sh.mu.Unlock()
	}
	f.rows = f.rows[:0]
	for _, s := range f.queued {
		dev := f.text[s.off : s.off+s.dev]
		user := f.text[s.off+s.dev : s.off+s.dev+s.user]
		f.rows = append(f.rows, persistence.DeviceSighting{PublisherID: s.pub, DeviceID: bytesString(dev), User: bytesString(user), At: s.at})
	}
	return f.rows
}

// --- metrics ---

func (q *Quality) statsOf(pub int64) *publisherStats {
	if v, ok := q.stats.Load(pub); ok {
		return v.(*publisherStats)
	}
	v, _ := q.stats.LoadOrStore(pub, new(publisherStats))
	return v.(*publisherStats)
}

// RegisterMetrics adds the quality families to m, labelled by publisher.
func (q *Quality) RegisterMetrics(m *httpio.Metrics) {
	if q == nil {
		return
	}
	counter := func(name, help string, f func(*publisherStats) int64) {
		m.Gauge(name, "counter", help, func() []httpio.Sample {
			var out []httpio.Sample
			q.stats.Range(func(k, v any) bool {
				out = append(out, httpio.Sample{Labels: `publisher="` + strconv.FormatInt(k.(int64), 10) + `"`,
					Value: float64(f(v.(*publisherStats)))})
				return true
			})
			return out
		})
	}
	counter("switchboard_quality_blocks_total", "Participants blocked for quality by this process, by publisher.",
		func(s *publisherStats) int64 { return s.blocks.Load() })
	counter("switchboard_quality_speeders_total", "Completes marked as speeders by this process, by publisher.",
		func(s *publisherStats) int64 { return s.speeders.Load() })
	counter("switchboard_quality_duplicates_total", "Duplicate-identity signals (shared devices, several countries) recorded by this process, by publisher.",
		func(s *publisherStats) int64 { return s.duplicates.Load() })
	counter("switchboard_quality_ip_mismatches_total", "GET /campaigns answers refused because the IP is in another country than the participant's, by publisher.",
		func(s *publisherStats) int64 { return s.ipMismatches.Load() })
	m.Gauge("switchboard_quality_blocked_participants", "gauge", "Participants blocked now, by publisher (every process holds the same set).",
		func() []httpio.Sample {
			now := q.now()
			per := map[int64]int{}
			for _, e := range q.blocks.Load().byID {
				if now < e.until {
					per[e.publisher]++
				}
			}
			out := make([]httpio.Sample, 0, len(per))
			for pub, n := range per {
				out = append(out, httpio.Sample{Labels: `publisher="` + strconv.FormatInt(pub, 10) + `"`, Value: float64(n)})
			}
			return out
		})
}

// Quality is the process's participant-quality state (nil before New has run).
func (a *API) Quality() *Quality { return a.quality }

// startQuality loads the blocked set and keeps it current until ctx ends.
func (a *API) startQuality(ctx context.Context) {
	if a.quality != nil && a.db != nil {
		// Loaded before serving: a server that just started must not offer surveys to
		// participants blocked elsewhere. run reloads on every (re)connect after this.
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := a.quality.LoadBlocks(lctx); err != nil {
			a.log.Warn("quality blocks not loaded at start; retrying in the background", zap.Error(err))
		}
		cancel()
		go a.quality.run(ctx)
	}
}
