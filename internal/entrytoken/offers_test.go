package entrytoken

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestOffersSignsAsAppendToken checks that the per-answer signer makes exactly the token
// Key.AppendToken makes of the same claims, at every alignment of the shared start to the
// CMAC's blocks and to base64's groups (device ids of 0–40 bytes move it), for campaign ids of
// every varint length, and that each verifies with its campaign.
func TestOffersSignsAsAppendToken(t *testing.T) {
	k := NewKey(testKey)
	rng := rand.New(rand.NewPCG(1, 2))
	campaigns := []int64{0, 1, 127, 128, 16383, 16384, 987654321, math.MaxInt64}
	for range 20 {
		campaigns = append(campaigns, rng.Int64N(1<<uint(rng.IntN(63))+1))
	}
	var o Offers
	for n := 0; n <= 40; n++ {
		c := sample()
		c.DeviceID = strings.Repeat("D", n)
		c.ParticipantID = rng.Int64N(1 << 40)
		k.Prepare(&o, c)
		for _, id := range campaigns {
			c.CampaignID = id
			want := string(k.AppendToken(nil, c))
			got := string(o.AppendToken(nil, id))
			if got != want {
				t.Fatalf("device id of %d bytes, campaign %d: got %s, want %s", n, id, got, want)
			}
			if v, err := k.Verify(got, c.Expires-1); err != nil || v != c {
				t.Fatalf("device id of %d bytes, campaign %d: verify %+v %v", n, id, v, err)
			}
		}
	}
	// Prepared under one key, then the ring rotates: the prepared signer keeps its key, whose
	// tokens verify while it is a previous key.
	c := sample()
	k.Prepare(&o, c)
	k.SetKeys(oldKey, Previous{Secret: testKey, Until: c.Expires})
	if _, err := k.Verify(string(o.AppendToken(nil, c.CampaignID)), c.Expires-1); err != nil {
		t.Fatal(err)
	}
}

func TestOffersAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	k := NewKey(testKey)
	o := new(Offers)
	buf := make([]byte, 0, 30*MaxTokenLen)
	if n := testing.AllocsPerRun(100, func() {
		k.Prepare(o, sample())
		buf = buf[:0]
		for id := range int64(30) {
			buf = o.AppendToken(buf, 1000+id)
		}
	}); n != 0 {
		t.Fatalf("Prepare and 30 tokens allocate %v times", n)
	}
}

// BenchmarkSignAnswer signs the 30 offer tokens of one answer, each on its own
// (Key.AppendToken, as before the Offers signer) and prepared once (Offers).
func BenchmarkSignAnswer(b *testing.B) {
	k := NewKey(testKey)
	c := sample()
	buf := make([]byte, 0, 30*MaxTokenLen)
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = buf[:0]
			for id := range int64(30) {
				c.CampaignID = 1000 + id
				buf = k.AppendToken(buf, c)
			}
		}
	})
	b.Run("prepared", func(b *testing.B) {
		o := new(Offers)
		b.ReportAllocs()
		for b.Loop() {
			k.Prepare(o, c)
			buf = buf[:0]
			for id := range int64(30) {
				buf = o.AppendToken(buf, 1000+id)
			}
		}
	})
}
