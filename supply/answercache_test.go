package supply

import (
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
)

// TestAnswerCacheAdmission: an answer is cached only on the second miss of its key within
// the TTL; a key of another fingerprint in the same slot, or a miss older than the TTL, does
// not admit.
func TestAnswerCacheAdmission(t *testing.T) {
	ac := newAnswerCache(15*time.Second, 1<<20)
	user, dev := []byte("u1"), []byte("d1")
	p, snap := &engine.Participant{ID: 1}, engine.New(nil).Snapshot().Version()
	key := ac.key(1, user, 1, dev)
	const now = 1_800_000_000
	set := func(at int64, body string) {
		ac.set(key, 1, user, 1, dev, p, snap, at, []byte(body))
	}
	get := func(at int64, snap uint64) []byte {
		_, b, ok := ac.get(nil, key, 1, user, 1, dev, p, snap, at)
		if ok != (b != nil) {
			t.Fatalf("ok %v with body %q", ok, b)
		}
		return b
	}
	set(now, "first")
	if b := get(now+30, snap); b != nil {
		t.Fatalf("first miss cached: %q", b)
	}
	set(now+20, "late") // older than the TTL: noted again, not cached
	if b := get(now+30, snap); b != nil {
		t.Fatalf("miss after the TTL cached: %q", b)
	}
	// Another key in the same slot replaces the note.
	other := key ^ 1<<40
	if ac.admit(other, now+21) {
		t.Fatal("other key admitted")
	}
	set(now+22, "evicted note")
	if b := get(now+30, snap); b != nil {
		t.Fatalf("cached after its note was replaced: %q", b)
	}
	set(now+30, "second")
	if b := get(now+30, snap); string(b) != "second" {
		t.Fatalf("second miss within the TTL: cached %q", b)
	}
	// An answer computed from an older snapshot is never served.
	if b := get(now+30, snap+1); b != nil {
		t.Fatalf("answer of a replaced snapshot served: %q", b)
	}
	// Nor past its TTL, nor to another identity or participant version under the same key.
	if b := get(now+44, snap); string(b) != "second" {
		t.Fatalf("within the TTL: %q", b)
	}
	if b := get(now+45, snap); b != nil {
		t.Fatalf("served at its TTL: %q", b)
	}
	for _, c := range []struct {
		pub       int64
		user, dev string
		devType   uint8
		p         *engine.Participant
	}{
		{2, "u1", "d1", 1, p}, {1, "u2", "d1", 1, p}, {1, "u1", "d2", 1, p}, {1, "u1", "", 1, p}, {1, "u1", "d1", 2, p},
		{1, "u1d", "1", 1, p}, {1, "u", "1d1", 1, p}, // the same bytes split otherwise
		{1, "u1", "d1", 1, &engine.Participant{ID: 1, Version: 1}}, {1, "u1", "d1", 1, nil},
	} {
		if _, b, ok := ac.get(nil, key, c.pub, []byte(c.user), c.devType, []byte(c.dev), c.p, snap, now+31); ok {
			t.Fatalf("%+v: served %q", c, b)
		}
	}
	// A clock that goes back admits nothing.
	if ac.admit(other, now+40) || ac.admit(other, now+39) {
		t.Fatal("admitted with the clock going back")
	}
}

// TestAnswerCacheWindow: when answers are written faster than the rings hold them for the
// TTL, a key is admitted only when it missed within the rings' window; when the writes stop,
// the TTL admits again.
func TestAnswerCacheWindow(t *testing.T) {
	ac := newAnswerCache(15*time.Second, 1<<20)
	p, snap := &engine.Participant{ID: 1}, engine.New(nil).Snapshot().Version()
	const now = 1_800_000_000
	body := make([]byte, 10<<10)
	key := func(i int) uint64 { return ac.key(1, []byte("u"+strconv.Itoa(i)), 1, nil) }
	// A second of 500 answers of 10 KiB, each its key's second miss: about five times the rings.
	for i := range 500 {
		ac.admit(key(i), now-1)
	}
	for i := range 500 {
		ac.set(key(i), 1, []byte("u"+strconv.Itoa(i)), 1, nil, p, snap, now, body)
	}
	if w := ac.window.Load(); w != 16 {
		t.Fatalf("window %d s before the rings were measured over a second, want the TTL's 16", w)
	}
	if adv := ac.ring.Stats().Advanced; adv < 4<<20 { // a few keys share an admission slot
		t.Fatalf("the rings advanced %d bytes, want most of the 500 answers written", adv)
	}
	ac.admit(key(1000), now)
	if ac.admit(key(1000), now+1) {
		t.Fatal("a second miss one second later admitted after the rings turned five times in a second")
	}
	if w := ac.window.Load(); w != 0 {
		t.Fatalf("window %d s after writing five rings in a second, want 0", w)
	}
	if ac.admit(key(1002), now+1) || !ac.admit(key(1002), now+1) {
		t.Fatal("refused a second miss of the same second")
	}
	// Nothing written since: the next second's measure widens the window to the TTL again.
	ac.admit(key(1003), now+5)
	if w := ac.window.Load(); w != 16 {
		t.Fatalf("window %d s after a quiet interval, want 16", w)
	}
	if !ac.admit(key(1003), now+15) {
		t.Fatal("a second miss ten seconds later refused with the TTL's window")
	}
}

// TestCampaignsMissAllocs: a miss of a key not seen before (the common case) allocates
// nothing with the cache on, and a repeat request is eventually answered from the cache.
func TestCampaignsMissAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	a, users := benchAPI(t, time.Minute)
	// Off: each request here names a new device, whose sighting (the shared-device rule,
	// supply/quality) is remembered in a map that grows up to its bound; the sightings' own
	// steady state, allocation-free, is TestSightingAllocs.
	a.quality = nil
	var ctx fasthttp.RequestCtx
	dev := make([]byte, 0, 32)
	i := 0
	req := func() {
		benchRequest(&ctx, users[i%len(users)])
		dev = strconv.AppendInt(append(dev[:0], "DEV-"...), int64(i), 10)
		ctx.Request.Header.SetBytesV("X-Device-Identifier", dev)
		a.campaigns(&ctx)
		i++
	}
	for range 200 {
		req()
	}
	if n := testing.AllocsPerRun(200, req); n != 0 {
		t.Fatalf("a first miss allocates %v times", n)
	}
	// Repeats: computed twice, then cached.
	var bodies []string
	for range 4 {
		benchRequest(&ctx, users[0])
		a.campaigns(&ctx)
		bodies = append(bodies, string(ctx.Response.Body()))
	}
	if bodies[0] == bodies[1] || bodies[1] != bodies[2] || bodies[2] != bodies[3] {
		t.Fatal("want the second answer cached and served to the third and fourth requests")
	}
}
