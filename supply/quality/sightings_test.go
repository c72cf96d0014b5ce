package quality

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
)

// A sighting is queued for writing once per (publisher, device, user) per sightRefresh, and
// what is remembered to spare the repeats stays under maxSeen whatever the traffic.
func TestSightingsRemembered(t *testing.T) {
	now := int64(1_700_000_000)
	q, err := New(Config{}, Deps{Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	queued := func() int {
		n := 0
		for i := range q.sightings {
			n += len(q.sightings[i].pending)
		}
		return n
	}
	dev, u1, u2 := []byte("DEV-1"), []byte("user-1"), []byte("user-2")
	for _, step := range []struct {
		pub        int64
		device     []byte
		user       []byte
		at         int64
		wantQueued int
	}{
		{1, dev, u1, now, 1},
		{1, dev, u1, now + 10, 1},                           // a repeat within the hour
		{1, dev, u2, now + 10, 2},                           // another user of the device
		{2, dev, u1, now + 10, 3},                           // another publisher
		{1, []byte("DEV-1u"), []byte("ser-1"), now + 10, 4}, // the same bytes split otherwise
		{1, dev, u1, now + sightRefresh - 1, 4},
		{1, dev, u1, now + sightRefresh, 5}, // an hour on: written again
	} {
		q.Sight(step.pub, step.device, step.user, step.at)
		if got := queued(); got != step.wantQueued {
			t.Fatalf("after %d/%s/%s at +%d: %d sightings queued, want %d", step.pub, step.device, step.user, step.at-now, got, step.wantQueued)
		}
	}

	// The flush collects exactly what was queued, each identifier whole.
	var got []string
	for _, r := range q.collectSightings() {
		got = append(got, fmt.Sprintf("%d/%s/%s/+%d", r.PublisherID, r.DeviceID, r.User, r.At-now))
	}
	slices.Sort(got)
	want := []string{"1/DEV-1/user-1/+0", "1/DEV-1/user-1/+3600", "1/DEV-1/user-2/+10", "1/DEV-1u/ser-1/+10", "2/DEV-1/user-1/+10"}
	if !slices.Equal(got, want) {
		t.Fatalf("collected %q, want %q", got, want)
	}
	if queued() != 0 {
		t.Fatalf("%d sightings still queued after a collect", queued())
	}

	// Half a million distinct sightings, half the table: their repeats within the hour are
	// hardly ever written. A million and a half more: the table stays its size, and the first
	// ones gave way to them.
	drain := func() { q.collectSightings() }
	b := make([]byte, 0, 16)
	written := func(from, to int, at int64) (n int) {
		for i := from; i < to; i++ {
			b = strconv.AppendInt(append(b[:0], "D-"...), int64(i), 10)
			q.Sight(1, b, u1, at)
			if i%(maxPending/2) == 0 {
				n += queued()
				drain()
			}
		}
		n += queued()
		drain()
		return n
	}
	const half = maxSeen / 2
	if n := written(0, half, now+20); n != half {
		t.Fatalf("%d of %d new sightings written", n, half)
	}
	if n := written(0, half, now+30); n > half/100 {
		t.Fatalf("%d of %d sightings' repeats within the hour written, want under 1%%", n, half)
	}
	written(half, half+3*half, now+40)
	for i := range q.sightings {
		if len(q.sightings[i].seen) != maxSeen/sightShards {
			t.Fatalf("shard %d holds %d slots, want %d", i, len(q.sightings[i].seen), maxSeen/sightShards)
		}
	}
	if n := written(0, half/4, now+50); n < half/4*95/100 {
		t.Fatalf("%d of the first %d sightings' repeats written after 1.5M newer ones, want nearly all: they gave way", n, half/4)
	}
}

// TestSightingBucket: a bucket remembers what its slots hold, gives the slot remembered
// longest ago to a new sighting, and an hour on a remembered sighting is not recent.
func TestSightingBucket(t *testing.T) {
	sh := &sightShard{seen: make([]uint64, 4*sightWays)}
	key := func(i int) uint64 { return uint64(i+1)<<32 + 2 } // all in bucket 2 of 4, fingerprint i+1
	now := int64(1_700_000_000)
	sightAt := func(i int, at int64) bool {
		slot, recent := sh.lookup(key(2*i), at)
		if slot < 2*sightWays || slot >= 3*sightWays {
			t.Fatalf("sighting %d in slot %d, outside its bucket", i, slot)
		}
		if !recent {
			sh.remember(slot, key(2*i), at)
		}
		return recent
	}
	for i := range sightWays {
		if sightAt(i, now+int64(i)) {
			t.Fatalf("sighting %d recent before it was seen", i)
		}
	}
	for i := range sightWays {
		if !sightAt(i, now+10) {
			t.Fatalf("sighting %d not remembered in a bucket with room for it", i)
		}
	}
	if sightAt(sightWays, now+20) { // one more: takes sighting 0's slot, the oldest
		t.Fatal("a new sighting found recent")
	}
	if sightAt(0, now+21) { // given way: it takes sighting 1's slot, the oldest now
		t.Fatal("the oldest sighting still remembered after a new one took the full bucket")
	}
	if !sightAt(sightWays, now+22) || !sightAt(2, now+22) || !sightAt(0, now+22) {
		t.Fatal("the new one, the one remembered again or the third oldest forgotten")
	}
	if sightAt(2, now+2+sightRefresh) {
		t.Fatal("a sighting an hour old is still recent")
	}
	for i, v := range sh.seen {
		if (i < 2*sightWays || i >= 3*sightWays) && v != 0 {
			t.Fatalf("slot %d outside the bucket written: %x", i, v)
		}
	}
}

// TestSightingAllocs: once the shards' buffers have grown and what is remembered has reached
// its bound (a large market's steady state), queueing a new device's sighting allocates
// nothing, and neither does collecting the queues for the flush.
func TestSightingAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	now := int64(1_700_000_000)
	q, err := New(Config{}, Deps{Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	dev, user := make([]byte, 0, 16), []byte("user-1")
	i := 0
	sight := func() {
		dev = strconv.AppendInt(append(dev[:0], "D-"...), int64(10_000_000+i), 10)
		q.Sight(1, dev, user, now)
		i++
	}
	for range maxSeen + maxSeen/8 {
		if i%(maxPending/4) == 0 {
			q.collectSightings()
		}
		sight()
	}
	q.collectSightings()
	if n := testing.AllocsPerRun(1000, sight); n != 0 {
		t.Fatalf("queueing a new sighting allocates %v times", n)
	}
	if n := testing.AllocsPerRun(10, func() { q.collectSightings() }); n != 0 {
		t.Fatalf("collecting the sightings allocates %v times", n)
	}
}
