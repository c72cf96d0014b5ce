package entrytoken

import (
	"crypto/rand"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// store is where a test's keys are kept: what a look-up loads.
type store struct {
	mu   sync.Mutex
	cur  []byte
	prev []Previous
	down bool
}

func (s *store) fetchInto(k *Key, fetches *atomic.Int64) func() error {
	return func() error {
		fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			return errors.New("database unreachable")
		}
		k.SetKeys(s.cur, s.prev...)
		return nil
	}
}

// TestLookupLearnsARotation: a token under a key the ring does not hold yet (rotated where
// the keys are kept, not heard of here) verifies after one look-up; so do the tokens that
// arrive with it, on the same look-up.
func TestLookupLearnsARotation(t *testing.T) {
	c := sample()
	now := c.Expires - 100
	k := NewKey(oldKey)
	s := &store{cur: oldKey}
	var fetches atomic.Int64
	k.SetLookup(s.fetchInto(k, &fetches))
	s.mu.Lock()
	s.cur, s.prev = testKey, []Previous{{Secret: oldKey, Until: now + 1000}}
	s.mu.Unlock()
	tok := NewKey(testKey).Sign(c)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := k.Verify(tok, now); err != nil || got != c {
				t.Errorf("token under the rotated key: %+v %v", got, err)
			}
		}()
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 || k.Lookups() != 1 {
		t.Errorf("%d fetches (%d counted) for 16 tokens of one rotation, want 1", n, k.Lookups())
	}
	if _, err := k.Verify(NewKey(oldKey).Sign(c), now); err != nil {
		t.Errorf("the previous key after the look-up: %v", err)
	}
	if _, err := k.Verify(tok, now); err != nil || fetches.Load() != 1 {
		t.Errorf("a held key costs a look-up: %v, %d fetches", err, fetches.Load())
	}
}

// TestLookupSharedByLaterTokens: tokens of a rotated key that arrive while the look-up
// their first one started is running verify on it, with no second look-up, even though
// their own wait began after it started.
func TestLookupSharedByLaterTokens(t *testing.T) {
	c := sample()
	now := c.Expires - 100
	k := NewKey(oldKey)
	s := &store{cur: testKey, prev: []Previous{{Secret: oldKey, Until: now + 1000}}}
	var fetches atomic.Int64
	load := s.fetchInto(k, &fetches)
	started := make(chan struct{})
	var once sync.Once
	k.SetLookup(func() error {
		once.Do(func() { close(started) })
		time.Sleep(50 * time.Millisecond) // a slow read: the later tokens arrive during it
		return load()
	})
	tok := NewKey(testKey).Sign(c)
	var wg sync.WaitGroup
	verify := func() {
		defer wg.Done()
		if got, err := k.Verify(tok, now); err != nil || got != c {
			t.Errorf("token under the rotated key: %+v %v", got, err)
		}
	}
	wg.Add(1)
	go verify()
	<-started
	for range 8 {
		wg.Add(1)
		go verify()
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d look-ups for tokens of one rotation arriving during it, want 1", n)
	}
}

// TestLookupIsBounded: tokens under random key ids cost at most one look-up per LookupEvery
// however many arrive, an id looked up in vain costs none for MissFor, and malformed or
// expired tokens, and held but retired keys, cost none at all. A failed look-up refuses
// without remembering the id.
func TestLookupIsBounded(t *testing.T) {
	c := sample()
	now := c.Expires - 100
	k := NewKey(testKey)
	s := &store{cur: testKey, prev: []Previous{{Secret: olderKey, Until: now - 1}}}
	var fetches atomic.Int64
	k.SetLookup(s.fetchInto(k, &fetches))
	k.SetKeys(testKey, Previous{Secret: olderKey, Until: now - 1})
	random := func() string {
		key := make([]byte, 32)
		rand.Read(key) //nolint:errcheck
		return NewKey(key).Sign(c)
	}

	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := k.Verify(random(), now); err == nil {
					t.Error("a token under a random key verified")
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if most := int64(elapsed/LookupEvery) + 1; fetches.Load() > most || fetches.Load() < 1 {
		t.Errorf("%d fetches for 200 random key ids in %v, want 1 to %d", fetches.Load(), elapsed, most)
	}

	forged := NewKey([]byte("a key this ring has never held..")).Sign(c)
	wantForbidden(t, verifyErr(k, forged, now), "forged")
	n := fetches.Load()
	start = time.Now()
	for range 100 {
		wantForbidden(t, verifyErr(k, forged, now), "forged again")
	}
	if fetches.Load() != n || time.Since(start) > LookupEvery {
		t.Errorf("an id looked up in vain: %d more fetches, %v for 100 tokens", fetches.Load()-n, time.Since(start))
	}
	expired := NewKey([]byte("another key never held by anyone")).Sign(Claims{Kind: KindOffer, Expires: now - 1})
	wantForbidden(t, verifyErr(k, expired, now), "expired")
	wantForbidden(t, verifyErr(k, NewKey(olderKey).Sign(c), now), "retired")
	wantForbidden(t, verifyErr(k, forged[:len(forged)-2]+"AA", now), "bad tag")
	if fetches.Load() != n {
		t.Errorf("%d fetches for expired, retired and malformed tokens, want none", fetches.Load()-n)
	}

	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	unheard := NewKey([]byte("a key rotated in while unreachable")).Sign(c)
	wantForbidden(t, verifyErr(k, unheard, now), "look-up failed")
	s.mu.Lock()
	s.down, s.cur = false, []byte("a key rotated in while unreachable")
	s.mu.Unlock()
	if _, err := k.Verify(unheard, now); err != nil {
		t.Errorf("after a failed look-up, the key found by the next: %v", err)
	}
}

func verifyErr(k *Key, tok string, now int64) error {
	_, err := k.Verify(tok, now)
	return err
}
