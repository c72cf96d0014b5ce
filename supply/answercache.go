package supply

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/identity"
	"github.com/switchboard/switchboard/internal/ringcache"
)

// answerCache keeps recent answers of GET /campaigns per (publisher, user, device type,
// device id). An entry is used only while the participant and the campaign snapshot it was
// computed from are still current, so an impanel, a recorded entry or a buyer change
// retires it at once; otherwise it lives for the TTL. A dropped entry only costs a recompute.
//
// The answers are kept in rings of bytes (internal/ringcache), each followed by a tail naming
// what it was computed for: caching an answer allocates nothing, so a high rate of answers does
// not make the garbage collector run (it did, every few seconds, with a heap object per
// answer, and the requests that met a collection made the offers' tail latency).
//
// Admission: most keys are asked for once, and caching their answer would only write ~12 KiB
// per miss over answers that are asked for again. An answer is therefore cached only when
// its key missed before within the TTL: seen, a direct-mapped table of (key fingerprint, unix
// second of the last miss), remembers the misses. A participant's second request in the TTL
// is computed and cached, the third on are hits. Collisions only make the filter forget a
// key (one more miss) or, with a matching 32-bit fingerprint, admit one early: never a wrong
// answer, which get rules out by comparing the tail's full identity.
//
// The miss before must also be more recent than the rings' window: how long an answer
// written now stays before the rings come round over it, at the rate they were written in
// the last second. A key asking again less often than that would find its answer written
// over; caching it is a copy of ~12 KiB for nothing. (64 MiB of rings hold about 5,000
// answers: at 35,000 answers a second over 200,000 participants, each asking every few
// seconds, the window is a fraction of a second, and admitting on the TTL alone cached six
// answers in ten for 2.6% of answers served from the cache.) Fewer writes widen the window
// again: admission settles where the keys that ask again soonest are the ones kept.
type answerCache struct {
	ring *ringcache.Cache // nil: no cache
	ttl  time.Duration
	seed maphash.Seed
	seen []atomic.Uint64 // fingerprint<<32 | unix second; indexed by the low bits of the key
	// window is the rings' window in whole seconds (0: less than one, only a miss of the
	// same second admits), at most the TTL's and the TTL's until measured; measured is the
	// unix second it was last measured at (0: never) and advanced the rings' Advanced then.
	window   atomic.Int64
	measured atomic.Int64
	advanced atomic.Uint64
	// hits and misses count get's answers (an entry found but no longer current is a miss),
	// for /metrics.
	hits, misses atomic.Uint64
}

// A cached value is the answer followed by its tail: the user and device ids, then what it
// was computed for, fixed-size, last (tailFixed bytes, offsets from its start), so that a hit
// hands the value's first bytes to the response as they are, with no copy to strip a head.
const (
	tailExpires     = 0  // unix nanoseconds after which it is not served
	tailPublisher   = 8  // publisher id
	tailParticipant = 16 // the panel's participant id, 0: not profiled
	tailSnap        = 24 // engine.Snapshot.Version the answer was computed from
	tailVersion     = 32 // the participant's panel version
	tailDevType     = 36
	tailUserLen     = 37
	tailDeviceLen   = 38
	tailFixed       = 39
	answerTailMax   = 2*maxIdentifier + tailFixed
)

func newAnswerCache(ttl time.Duration, maxBytes int64) *answerCache {
	ac := &answerCache{ttl: ttl, seed: maphash.MakeSeed()}
	if ttl <= 0 {
		return ac
	}
	ac.ring = ringcache.New(maxBytes)
	// About the number of admission slots: one per ~256 bytes of budget, 8 bytes each and no
	// pointers (the GC does not scan it). 64 MiB → 262,144 slots, 2 MiB.
	slots := 1 << 12
	for slots < 1<<22 && int64(slots) < maxBytes/256 {
		slots <<= 1
	}
	ac.seen = make([]atomic.Uint64, slots)
	ac.window.Store(ac.ttlSeconds())
	return ac
}

// ttlSeconds is the oldest miss, in whole seconds, that admission accepts by the TTL: the
// TTL and the second a timestamp in seconds may lose.
func (ac *answerCache) ttlSeconds() int64 { return int64(ac.ttl/time.Second) + 1 }

// measure updates the window once a second (at the first miss of a new second): the rings'
// capacity over the bytes written into them since the last measure, per second between.
func (ac *answerCache) measure(now int64) {
	last := ac.measured.Load()
	if now <= last || !ac.measured.CompareAndSwap(last, now) { // measured, or a late caller's second
		return
	}
	pos := ac.ring.Stats().Advanced
	prev := ac.advanced.Swap(pos)
	if last == 0 { // the first measure: no interval yet
		return
	}
	w := ac.ttlSeconds()
	if written := pos - prev; written > 0 {
		w = min(w, int64(float64(ac.ring.Capacity())*float64(now-last)/float64(written)))
	}
	ac.window.Store(w)
}

// admit reports whether the answer of key, which just missed at now (unix seconds), should
// be cached: whether key missed before within the TTL and the rings' window. It notes the
// miss either way.
func (ac *answerCache) admit(key uint64, now int64) bool {
	ac.measure(now)
	slot := &ac.seen[key&uint64(len(ac.seen)-1)]
	fp := key >> 32
	v := slot.Load()
	slot.Store(fp<<32 | uint64(uint32(now)))
	age := uint32(now) - uint32(v) // wraps: a clock that went back admits nothing
	return v != 0 && v>>32 == fp && int64(age) <= ac.window.Load()
}

func (ac *answerCache) key(pub int64, user []byte, devType uint8, device []byte) uint64 {
	return identity.Hash(ac.seed, pub, devType, user, device)
}

// get looks up key's answer at now (unix seconds): the cached value is appended to buf (its
// capacity reused), and body, its first bytes, is the answer when ok, that is when the
// answer was computed for this very identity, participant version and snapshot within the
// TTL.
func (ac *answerCache) get(buf []byte, key uint64, pub int64, user []byte, devType uint8, device []byte,
	p *engine.Participant, snap uint64, now int64) (_ []byte, body []byte, ok bool) {
	if ac.ring == nil {
		return buf, nil, false
	}
	v, found := ac.ring.Get(buf[:0], key)
	n := 0
	if found {
		n = ac.answerLen(v, pub, user, devType, device, p, snap, now)
	}
	if n < 0 || !found {
		ac.misses.Add(1)
		return v, nil, false
	}
	ac.hits.Add(1)
	return v, v[:n], true
}

// answerLen returns the length of the answer that cached value v holds when it is an answer
// for this identity, participant and snapshot, not expired at now (unix seconds); -1 when it
// is not.
func (ac *answerCache) answerLen(v []byte, pub int64, user []byte, devType uint8, device []byte,
	p *engine.Participant, snap uint64, now int64) int {
	if len(v) < tailFixed {
		return -1
	}
	t := v[len(v)-tailFixed:]
	nu, nd := int(t[tailUserLen]), int(t[tailDeviceLen])
	n := len(v) - tailFixed - nu - nd
	if n < 0 || nu != len(user) || nd != len(device) {
		return -1
	}
	id, version := participantVersion(p)
	le := binary.LittleEndian
	if now*int64(time.Second) < int64(le.Uint64(t[tailExpires:])) &&
		int64(le.Uint64(t[tailPublisher:])) == pub && int64(le.Uint64(t[tailParticipant:])) == id &&
		le.Uint64(t[tailSnap:]) == snap && le.Uint32(t[tailVersion:]) == version && t[tailDevType] == devType &&
		string(v[n:n+nu]) == string(user) && string(v[n+nu:n+nu+nd]) == string(device) {
		return n
	}
	return -1
}

// set caches body as key's answer at now (unix seconds), when admit lets it.
func (ac *answerCache) set(key uint64, pub int64, user []byte, devType uint8, device []byte, p *engine.Participant,
	snap uint64, now int64, body []byte) {
	if ac.ring == nil || !ac.admit(key, now) || len(user) > maxIdentifier || len(device) > maxIdentifier {
		return
	}
	var tail [answerTailMax]byte
	n := copy(tail[:], user)
	n += copy(tail[n:], device)
	t := tail[n : n+tailFixed]
	le := binary.LittleEndian
	id, version := participantVersion(p)
	le.PutUint64(t[tailExpires:], uint64(now*int64(time.Second)+int64(ac.ttl)))
	le.PutUint64(t[tailPublisher:], uint64(pub))
	le.PutUint64(t[tailParticipant:], uint64(id))
	le.PutUint64(t[tailSnap:], snap)
	le.PutUint32(t[tailVersion:], version)
	t[tailDevType], t[tailUserLen], t[tailDeviceLen] = devType, byte(len(user)), byte(len(device))
	ac.ring.Set(key, body, tail[:n+tailFixed])
}

// participantVersion returns the id and panel version of p, or 0, 0 for nil.
func participantVersion(p *engine.Participant) (int64, uint32) {
	if p == nil {
		return 0, 0
	}
	return p.ID, p.Version
}

// dropUser forgets the cached answers of a user for every device type, with the device id of
// the impanel and without one. (Answers under other device ids are retired anyway: they
// were computed from the participant as it was before.)
func (ac *answerCache) dropUser(pub int64, user, device []byte) {
	if ac.ring == nil {
		return
	}
	for dt := uint8(1); dt <= 3; dt++ {
		ac.ring.Del(ac.key(pub, user, dt, nil))
		if len(device) > 0 {
			ac.ring.Del(ac.key(pub, user, dt, device))
		}
	}
}
