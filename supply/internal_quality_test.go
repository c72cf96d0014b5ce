package supply

import (
	"net/netip"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// TestPublicIPv4MatchesPrefixes checks the first-octet fast path against the generic rules.
func TestPublicIPv4MatchesPrefixes(t *testing.T) {
	for a := 0; a < 256; a++ {
		for _, b := range []int{0, 1, 2, 15, 16, 17, 18, 19, 31, 32, 51, 63, 64, 65, 100, 127, 128, 168, 254, 255} {
			for _, c := range []int{0, 1, 2, 100, 113, 255} {
				ip := netip.AddrFrom4([4]byte{byte(a), byte(b), byte(c), 7})
				for _, allow := range []bool{false, true} {
					if got, want := publicIPv4(ip.As4(), allow), publicByRules(ip, allow); got != want {
						t.Fatalf("%v allow=%v: fast %v, rules %v", ip, allow, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkCampaignsQuality compares GET /campaigns with the quality checks off (the code
// before them) and on (IP checks, a blocked set of 1,000 other participants, sightings) in
// one run.
func BenchmarkCampaignsQuality(b *testing.B) {
	for _, hit := range []bool{false, true} {
		for _, on := range []bool{false, true} {
			name := map[bool]string{false: "miss", true: "hit"}[hit] + "/" + map[bool]string{false: "off", true: "on"}[on]
			b.Run(name, func(b *testing.B) {
				ttl := -1 * time.Second
				if hit {
					ttl = time.Minute
				}
				a, users := benchAPI(b, ttl)
				if on {
					var blocks []persistence.QualityBlock
					for i := range 1000 {
						blocks = append(blocks, persistence.QualityBlock{ParticipantID: int64(1_000_000 + i), PublisherID: 1,
							User: "blocked", RuleClass: quality.ClassSpeeding, BlockedAt: time.Unix(synth.Now, 0),
							ExpiresAt: time.Unix(synth.Now+3600, 0)})
					}
					a.quality.Apply(blocks, false)
				} else {
					a.quality = nil
				}
				var ctx fasthttp.RequestCtx
				for i := range 200 {
					benchRequest(&ctx, users[i%len(users)])
					a.campaigns(&ctx)
				}
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for b.Loop() {
					u := users[i%len(users)]
					if hit {
						u = users[0]
					}
					benchRequest(&ctx, u)
					a.campaigns(&ctx)
					i++
				}
			})
		}
	}
}
