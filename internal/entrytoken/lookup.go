package entrytoken

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// A process hears of a rotation by a notification, which takes a moment, and not at all while
// its LISTEN connection is down (then its periodic reload does, up to a minute later).
// Meanwhile another process may already hand out links under the new key, and a keyring that
// refused their key id as unknown would refuse good links. So a token naming a key id the ring
// does not hold makes the keyring reload its keys (SetLookup) before it is refused. Anyone can
// send such tokens, so the look-ups are bounded:
//
//   - only a well-formed, unexpired token of the current format costs one;
//   - a token waits for a reload that starts after it arrived, and one reload serves every
//     token waiting (single flight);
//   - reloads start at most once per LookupEvery: a flood of random key ids costs the
//     database at most ten reads a second, and each such token at most about LookupEvery
//     plus one read;
//   - a key id that a reload did not find is refused at once for the next MissFor (the last
//     missSlots of them are remembered): the same forged id sent again costs nothing.
//
// The tokens of a key the ring holds never take this path: the entry stays as it was,
// without a lock or an allocation more.

// LookupEvery is the least time between the starts of two look-ups.
const LookupEvery = 100 * time.Millisecond

// MissFor is how long a key id that a look-up did not find is refused without another.
const MissFor = time.Minute

// missSlots is how many such key ids are remembered.
const missSlots = 64

// lookup reloads a keyring for tokens that name a key it does not hold.
type lookup struct {
	fetch func() error // reloads the ring (Key.SetKeys); safe to run again at once
	count atomic.Int64 // fetches run

	mu       sync.Mutex
	running  bool
	done     chan struct{} // closed when the running fetch ends
	started  uint64        // fetches started
	finished uint64        // the number of the last one finished
	failed   bool          // the last one finished failed
	last     time.Time     // start of the last fetch
	misses   [missSlots]miss
	next     int // the slot the next miss takes
}

// miss is a key id a look-up did not find, and when.
type miss struct {
	id uint32
	at time.Time
}

// SetLookup makes fetch the way the keyring learns keys it does not hold: fetch loads the
// current keys from where they are kept and calls SetKeys. Call it once, before the key is
// used concurrently.
func (k *Key) SetLookup(fetch func() error) { k.look = &lookup{fetch: fetch} }

// Lookups is the number of look-ups run for tokens under unknown key ids.
func (k *Key) Lookups() int64 {
	if k.look == nil {
		return 0
	}
	return k.look.count.Load()
}

// missed reports whether id was looked up in vain within MissFor of now.
func (l *lookup) missed(id uint32, now time.Time) bool {
	for _, m := range l.misses {
		if m.id == id && !m.at.IsZero() && now.Sub(m.at) < MissFor {
			return true
		}
	}
	return false
}

// remember records that a look-up did not find id.
func (l *lookup) remember(id uint32) {
	l.mu.Lock()
	l.misses[l.next] = miss{id: id, at: time.Now()}
	l.next = (l.next + 1) % missSlots
	l.mu.Unlock()
}

// await returns once a fetch that started after the call has finished, and reports whether
// the last one finished succeeded; it returns false at once when id was looked up in vain
// lately, and true as soon as held reports that the ring holds id (a fetch that another
// token started brought it in), so that one rotation costs one fetch however many tokens
// of it arrive together.
func (l *lookup) await(id uint32, held func() bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.missed(id, time.Now()) {
		return false
	}
	need := l.started + 1
	for l.finished < need {
		if held() {
			return true
		}
		if l.running {
			done := l.done
			l.mu.Unlock()
			<-done
			l.mu.Lock()
			continue
		}
		if wait := time.Until(l.last.Add(LookupEvery)); wait > 0 {
			l.mu.Unlock()
			time.Sleep(wait)
			l.mu.Lock()
			continue
		}
		l.running, l.done, l.last = true, make(chan struct{}), time.Now()
		l.started++
		mine := l.started
		l.mu.Unlock()
		err := l.fetch()
		l.count.Add(1)
		l.mu.Lock()
		l.running, l.finished, l.failed = false, mine, err != nil
		close(l.done)
	}
	return !l.failed
}

// verifyLooked is Verify's second chance for a token whose key id the ring does not hold: a
// well-formed, unexpired version 4 token waits for a look-up, then is checked against the
// ring it loaded. A key id still unknown after a successful look-up is remembered as missed.
func (k *Key) verifyLooked(payload, tag []byte, now int64) bool {
	if k.look == nil || len(payload) < headerLen || payload[0] != version {
		return false
	}
	if c, ok := parsePayload(payload); !ok || c.Expires <= now {
		return false
	}
	id := binary.BigEndian.Uint32(payload[2:headerLen])
	held := func() bool {
		_, unknown := k.ring.Load().check(payload, tag, now)
		return !unknown
	}
	if !k.look.await(id, held) {
		return false
	}
	ok, unknown := k.ring.Load().check(payload, tag, now)
	if !ok && unknown {
		k.look.remember(id)
	}
	return ok
}
