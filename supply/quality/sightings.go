package quality

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/switchboard/switchboard/internal/identity"
	"github.com/switchboard/switchboard/internal/retry"
	"github.com/switchboard/switchboard/persistence"
)

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

// Sight notes that device was used by user of publisher pub; it never blocks and, once the
// shard's buffers have grown, allocates nothing.
func (q *Service) Sight(pub int64, device, user []byte, now int64) {
	if q == nil || len(device) == 0 {
		return
	}
	sh := &q.sightings[maphash.Bytes(q.seed, device)%sightShards]
	k := identity.Hash(q.seed, pub, 0, device, user)
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

func (q *Service) runFlush(ctx context.Context) {
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
func (q *Service) FlushSightings(ctx context.Context) error {
	q.flush.mu.Lock()
	defer q.flush.mu.Unlock()
	rows := q.collectSightings()
	if len(rows) == 0 {
		return nil
	}
	_, out, err := q.store.RecordDeviceSightings(ctx, q.cfg.Policy, rows, q.cfg.DuplicateDeviceUsers)
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
func (q *Service) collectSightings() []persistence.DeviceSighting {
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
		f.rows = append(f.rows, persistence.DeviceSighting{PublisherID: s.pub, DeviceID: identity.View(dev), User: identity.View(user), At: s.at})
	}
	return f.rows
}
