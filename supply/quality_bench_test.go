package supply

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine/synth"
	policy "github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

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
							User: "blocked", RuleClass: policy.ClassSpeeding, BlockedAt: time.Unix(synth.Now, 0),
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
