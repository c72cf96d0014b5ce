package supply

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"go.uber.org/zap"
)

// A sighting is queued for writing once per (publisher, device, user) per sightRefresh, and
// what is remembered to spare the repeats stays under maxSeen whatever the traffic.
func TestSightingsRemembered(t *testing.T) {
	now := int64(1_700_000_000)
	q, err := newQuality(QualityConfig{}, nil, zap.NewNop(), func() int64 { return now }, nil)
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
	remembered := func() int {
		n := 0
		for i := range q.sightings {
			n += len(q.sightings[i].seen)
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
		q.sight(step.pub, step.device, step.user, step.at)
		if got := queued(); got != step.wantQueued {
			t.Fatalf("after %d/%s/%s at +%d: %d sightings queued, want %d", step.pub, step.device, step.user, step.at-now, got, step.wantQueued)
		}
	}

	// The flush collects exactly what was queued, each identifier whole.
	var got []string
	for _, r := range q.collectSightings(now) {
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

	drain := func() { q.collectSightings(now) }
	const n = maxSeen + maxSeen/4
	b := make([]byte, 0, 16)
	for i := range n {
		if i%(maxPending/2) == 0 {
			drain()
		}
		b = strconv.AppendInt(append(b[:0], "D-"...), int64(i), 10)
		q.sight(1, b, u1, now)
	}
	if got := remembered(); got > maxSeen || got < maxSeen*9/10 {
		t.Fatalf("%d sightings remembered after %d distinct ones, want at most %d (and near it)", got, n, maxSeen)
	}
	drain()
	q.sight(1, []byte("D-"+strconv.Itoa(n-1)), u1, now+1) // not remembered: written again
	if queued() != 1 {
		t.Fatalf("a sighting past the bound was not queued again (%d queued)", queued())
	}

	// An hour on, the flush's purge empties the full shards; a fresh sighting is remembered.
	for i := range q.sightings {
		q.sightings[i].forget(now + sightRefresh - 1)
	}
	if got := remembered(); got < maxSeen*9/10 {
		t.Fatalf("%d sightings remembered after a purge within the hour, want them all kept", got)
	}
	for i := range q.sightings {
		// The walk found nothing due before its oldest sighting's hour is up.
		if sh := &q.sightings[i]; len(sh.seen) >= maxSeen/sightShards/2 && sh.purgeAt != now+sightRefresh {
			t.Fatalf("shard %d: next purge at %+d, want at the oldest sighting's hour (%+d)", i, sh.purgeAt-now, sightRefresh)
		}
		q.sightings[i].forget(now + sightRefresh + 1)
	}
	if got := remembered(); got > 5 { // the first steps' sightings, from +10 on, are within the hour
		t.Fatalf("%d sightings remembered after the hour's purge, want those of the last hour only", got)
	}
	// A shard half full again before its next purge is due keeps what it holds.
	sh := &q.sightings[0]
	sh.purgeAt = now + 2*sightRefresh
	for i := range maxSeen / sightShards {
		sh.seen[uint64(i)+1<<40] = now
	}
	if sh.forget(now + sightRefresh + 2); len(sh.seen) < maxSeen/sightShards {
		t.Fatalf("a purge before it was due dropped sightings: %d left", len(sh.seen))
	}
	if sh.forget(now + 2*sightRefresh); len(sh.seen) > 5 {
		t.Fatalf("the purge when due kept %d sightings", len(sh.seen))
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
	q, err := newQuality(QualityConfig{}, nil, zap.NewNop(), func() int64 { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, user := make([]byte, 0, 16), []byte("user-1")
	i := 0
	sight := func() {
		dev = strconv.AppendInt(append(dev[:0], "D-"...), int64(10_000_000+i), 10)
		q.sight(1, dev, user, now)
		i++
	}
	for range maxSeen + maxSeen/8 {
		if i%(maxPending/4) == 0 {
			q.collectSightings(now)
		}
		sight()
	}
	q.collectSightings(now)
	if n := testing.AllocsPerRun(1000, sight); n != 0 {
		t.Fatalf("queueing a new sighting allocates %v times", n)
	}
	if n := testing.AllocsPerRun(10, func() { q.collectSightings(now) }); n != 0 {
		t.Fatalf("collecting the sightings allocates %v times", n)
	}
}
