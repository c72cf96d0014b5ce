package ringcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// value returns a value of n bytes that names its key and version.
func value(key uint64, version, n int) []byte {
	b := make([]byte, max(n, 16))
	binary.LittleEndian.PutUint64(b, key)
	binary.LittleEndian.PutUint64(b[8:], uint64(version))
	for i := 16; i < len(b); i++ {
		b[i] = byte(key) ^ byte(version) ^ byte(i)
	}
	return b
}

// TestAgainstMap: on random sets, deletes and gets, the cache never answers a value other
// than key's last one (never one deleted since), and keeps every value of the last quarter
// of a ring's bytes.
func TestAgainstMap(t *testing.T) {
	for _, size := range []int64{4 << 10, 64 << 10, 3 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := New(size)
			ringLen := len(c.shards[0].ring)
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			last := map[uint64][]byte{}
			// recent[shard] lists the keys set in it, newest last, with their entry sizes.
			type set struct {
				key  uint64
				size int
			}
			recent := make([][]set, len(c.shards))
			var got []byte
			for i := range 20000 {
				key := rng.Uint64N(300) << 30 // spread over the shards (the high bits pick them)
				switch op := rng.IntN(10); {
				case op < 5:
					n := rng.IntN(ringLen / 3)
					if rng.IntN(4) > 0 {
						n = rng.IntN(ringLen / 16)
					}
					v := value(key, i, n)
					head, body := v[:len(v)/3], v[len(v)/3:]
					c.Set(key, head, body)
					if entryHead+len(v) > ringLen/4 {
						delete(last, key)
						continue
					}
					last[key] = v
					sh := (key >> 32) % uint64(len(c.shards))
					recent[sh] = append(recent[sh], set{key, entryHead + len(v)})
				case op < 6:
					c.Del(key)
					delete(last, key)
				default:
					var ok bool
					got, ok = c.Get(got[:0], key)
					want, known := last[key]
					if ok && (!known || !bytes.Equal(got, want)) {
						t.Fatalf("op %d: key %x: got a value of %d bytes (version %d), want %v", i, key, len(got),
							binary.LittleEndian.Uint64(got[8:]), known)
					}
					if ok || !known {
						continue
					}
					// A miss is allowed only when a quarter of the ring has been written since.
					sh := (key >> 32) % uint64(len(c.shards))
					since := 0
					for j := len(recent[sh]) - 1; j >= 0 && recent[sh][j].key != key; j-- {
						since += recent[sh][j].size
					}
					if since < ringLen/4 {
						t.Fatalf("op %d: key %x missed with %d bytes written after it (ring %d)", i, key, since, ringLen)
					}
				}
			}
		})
	}
}

// TestOverwrite: a full lap of writes after a value forgets it, and the index does not grow
// past two laps of entries.
func TestOverwrite(t *testing.T) {
	c := New(4 << 10) // one shard of 4 KiB
	c.Set(1, []byte("head"), []byte("body"))
	if v, ok := c.Get(nil, 1); !ok || string(v) != "headbody" {
		t.Fatalf("got %q, %v", v, ok)
	}
	for k := uint64(2); k < 2000; k++ {
		c.Set(k, nil, make([]byte, 60))
	}
	if _, ok := c.Get(nil, 1); ok {
		t.Fatal("value kept after the ring went round")
	}
	if n, most := len(c.shards[0].idx), 2*4096/64; n > most {
		t.Fatalf("index of %d entries, want at most %d", n, most)
	}
	if st := c.Stats(); st.Bytes != 4096 || st.Evictions < 1800 {
		t.Fatalf("stats %+v", st)
	}
	c.Set(5000, nil, make([]byte, 1025)) // more than a quarter of the ring: not stored
	if _, ok := c.Get(nil, 5000); ok {
		t.Fatal("oversized value stored")
	}
}

// TestNoAllocs: once a shard's index has grown, Set and Get allocate nothing.
func TestNoAllocs(t *testing.T) {
	c := New(8 << 20)
	body := make([]byte, 12<<10)
	dst := make([]byte, 0, 16<<10)
	for k := range uint64(10000) {
		c.Set(k<<32, body[:32], body)
	}
	k := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		c.Set(k<<32, body[:32], body)
		dst, _ = c.Get(dst[:0], k<<32)
		k = (k + 1) % 10000
	}); a != 0 {
		t.Fatalf("%v allocations per set and get", a)
	}
}

// TestConcurrent: gets and sets from several goroutines (run with -race) see whole values.
func TestConcurrent(t *testing.T) {
	c := New(256 << 10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			var got []byte
			for i := range 20000 {
				key := rng.Uint64N(64) << 32
				if rng.IntN(2) == 0 {
					v := value(key, i, 100+rng.IntN(900))
					c.Set(key, nil, v)
					continue
				}
				var ok bool
				if got, ok = c.Get(got[:0], key); ok {
					version := int(binary.LittleEndian.Uint64(got[8:]))
					if binary.LittleEndian.Uint64(got) != key || !bytes.Equal(got, value(key, version, len(got))) {
						t.Errorf("key %x: torn or foreign value", key)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestStatsAdvanced: the rings advance by each entry's value and head, laps' skipped tails
// included, and Capacity is what they hold.
func TestStatsAdvanced(t *testing.T) {
	c := New(4 << 20)
	if got := c.Capacity(); got != 4<<20 {
		t.Fatalf("capacity %d, want %d", got, 4<<20)
	}
	if c.Stats().Advanced != 0 {
		t.Fatal("a new cache advanced")
	}
	var want uint64
	for k := range uint64(1000) {
		v := value(k<<32|k, 0, 1000)
		c.Set(k<<32|k, v, nil)
		want += entryHead + uint64(len(v))
	}
	// No ring laps (1000 values of ~1 KiB into 4 MiB of 1 MiB rings): the advance is exactly
	// the bytes written.
	if got := c.Stats().Advanced; got != want {
		t.Fatalf("advanced %d, want %d", got, want)
	}
	small := New(4 << 10)
	for k := range uint64(100) {
		small.Set(k, value(k, 0, 1000), nil) // 1004 bytes: four a lap, its last 80 bytes skipped
	}
	if got, want := small.Stats().Advanced, uint64(100*1004+24*80); got != want {
		t.Fatalf("small cache advanced %d, want %d (the values and 24 laps' tails)", got, want)
	}
}
